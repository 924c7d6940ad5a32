import { deletePrefix, redisUrl } from '../support/prefix';
import { walletsSuite } from '../support/wallets-suite';

// Two wallets and two engines on one Redis (test/support/wallets-suite.ts): one untagged shard (the
// one-Redis layout), and four hash-tagged shards (the cluster's key layout).
describe.each(['1', '4'])('with REDIS_SHARDS=%s', (shards) => {
  walletsSuite({ label: `wallets${shards}`, start: async () => ({ REDIS_URL: redisUrl(), REDIS_SHARDS: shards }), stop: (prefix) => deletePrefix(prefix) });
});
