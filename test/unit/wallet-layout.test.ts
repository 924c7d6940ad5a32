import { retryJobId, terminateJobId } from '../../src/duties/queues';
import { walletLayout, walletOfSessionId } from '../../src/registry/wallet-layout';
import { shardLayoutFor } from '../../src/store/shards';

/** Each wallet's keys are its own (contract 11); wallet `default` keeps the single-wallet layout. */
describe('wallet key layout', () => {
  const one = { QUEUE_PREFIX: 'wgw', redisShards: 1 };
  const cluster = { QUEUE_PREFIX: 'wgw', redisShards: 16, REDIS_CLUSTER_NODES: [{ host: 'h', port: 1 }] };

  it('wallet default keeps today\'s keys and ids, on one Redis and on a cluster', () => {
    for (const settings of [one, cluster]) {
      const today = shardLayoutFor(settings);
      const layout = walletLayout(settings, 'default');
      for (const shard of today.all) {
        expect(layout.keys(shard).transaction('t1')).toBe(today.keys(shard).transaction('t1'));
        expect(layout.keys(shard).breaker()).toBe(today.keys(shard).breaker());
        expect(layout.queuePrefix(shard)).toBe(today.queuePrefix(shard));
        expect(layout.withShard('abc', shard)).toBe(today.withShard('abc', shard));
      }
    }
    expect(walletLayout(one, 'default').keys(0).breaker()).toBe('wgw:wallet-breaker');
  });

  it('another wallet\'s keys, queues and breaker are under its own prefix; its ids name it', () => {
    const layout = walletLayout(one, 'casino-b');
    const keys = layout.keys(0);
    expect(keys.transaction('t1')).toBe('wgw:w:casino-b:tx:t1');
    expect(keys.round('1', '7', 'r')).toBe('wgw:w:casino-b:round:1:7:r');
    expect(keys.breaker()).toBe('wgw:w:casino-b:wallet-breaker');
    expect(layout.queuePrefix(0)).toBe('wgw:w:casino-b');
    const sessionId = layout.withShard('A'.repeat(22), 0);
    expect(sessionId).toBe(`casino-b~${'A'.repeat(22)}`);
    expect(walletOfSessionId(sessionId)).toBe('casino-b');
    expect(walletOfSessionId('A'.repeat(22))).toBe('default');
    // An id of another wallet names no shard of this one, and the other way round.
    expect(layout.shardOfId('A'.repeat(22))).toBeUndefined();
    expect(walletLayout(one, 'default').shardOfId(sessionId)).toBeUndefined();
    expect(walletLayout(one, 'casino-c').shardOfId(sessionId)).toBeUndefined();
  });

  it('every key of a wallet is under its own prefix: none is shared with another wallet', () => {
    for (const settings of [one, cluster]) {
      const b = walletLayout(settings, 'casino-b');
      const c = walletLayout(settings, 'casino-c');
      const a = walletLayout(settings, 'default');
      for (const shard of b.all) {
        const keysOf = (layout: typeof b) => Object.values(layout.keys(shard)).map((make: (...args: string[]) => string) => make('x', 'y', 'z'));
        const own = keysOf(b);
        expect(own.length).toBeGreaterThan(20);
        for (const key of own) expect(key.startsWith(settings === one ? 'wgw:w:casino-b:' : `${b.queuePrefix(shard)}:`)).toBe(true);
        for (const other of [...keysOf(a), ...keysOf(c)]) expect(own).not.toContain(other);
      }
    }
  });

  it('on a cluster each wallet has its own shards, each one slot, and none shares a tag with another wallet\'s', () => {
    const a = walletLayout(cluster, 'default');
    const b = walletLayout(cluster, 'casino-b');
    const tags = (layout: typeof a) => layout.all.map((k) => layout.queuePrefix(k));
    expect(new Set([...tags(a), ...tags(b)]).size).toBe(32);
    for (const k of b.all) {
      const tag = b.queuePrefix(k);
      expect(tag).toMatch(/^\{wgw:w:casino-b-s\d+(\.\d+)?\}$/);
      expect(b.keys(k).transaction('t1')).toBe(`${tag}:tx:t1`);
      expect(b.keys(k).session('s')).toBe(`${tag}:session:s`);
    }
    const sessionId = b.withShard('A'.repeat(22), 5);
    expect(sessionId).toBe(`casino-b~${'A'.repeat(22)}.5`);
    expect(b.shardOfId(sessionId)).toBe(5);
    expect(a.shardOfId(sessionId)).toBeUndefined();
    // The same player is in the same shard number of each wallet, in different slots.
    expect(b.shardOfPlayer('1', '7')).toBe(a.shardOfPlayer('1', '7'));
  });

  it('job ids of a wallet\'s work hold no ":" (BullMQ refuses it)', () => {
    const tokenRef = walletLayout(cluster, 'casino-b').withShard('B'.repeat(22), 3);
    expect(terminateJobId(tokenRef)).not.toContain(':');
    expect(retryJobId('tx:with:colons')).not.toContain(':');
  });
});
