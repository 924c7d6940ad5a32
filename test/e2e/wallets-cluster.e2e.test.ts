import { ClusterTopology } from '../../src/lib/redis-cluster';
import { walletsSuite } from '../support/wallets-suite';

// Two wallets and two engines on a Redis Cluster of 3 masters (test/support/wallets-suite.ts): each
// wallet's shards are its own slots, and every multi-key step stays in one.
jest.setTimeout(120_000);

describe('on a Redis Cluster', () => {
  let cluster: ClusterTopology | undefined;
  walletsSuite({
    label: 'walletscl',
    start: async () => {
      cluster = await ClusterTopology.start({ aof: 'off' });
      return { REDIS_CLUSTER_NODES: cluster.nodeAddresses };
    },
    // The cluster goes with every key on it.
    stop: async () => {
      await cluster?.stop();
    },
  });
});
