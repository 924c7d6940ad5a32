import { CLUSTER_SLOTS, crc16, shardLayout, shardTag, slotOfTag } from '../../src/store/shards';

describe('shard layout', () => {
  it('computes Redis Cluster slots (CRC16-XMODEM, as in the cluster spec)', () => {
    expect(crc16('123456789')).toBe(0x31c3);
    expect(slotOfTag('foo')).toBe(12182);
    expect(slotOfTag('bar')).toBe(5061);
  });

  it('keeps the one-Redis key layout with one untagged shard', () => {
    const layout = shardLayout('wgw', 1);
    expect(layout.keys(0).transaction('t1')).toBe('wgw:tx:t1');
    expect(layout.queuePrefix(0)).toBe('wgw');
    expect(layout.withShard('abc', 0)).toBe('abc');
    expect(layout.shardOfId('abc')).toBe(0);
    expect(layout.shardOfPlayer('p', 's')).toBe(0);
  });

  it('tags every key of a shard with the shard, one slot per shard, each at the start of its share of the slot space', () => {
    const count = 16;
    const layout = shardLayout('wgw', count);
    const slots = layout.all.map((k) => layout.slot(k));
    expect(new Set(slots).size).toBe(count);
    for (const k of layout.all) {
      // At the start of the shard's share of the slot space: 3 equal masters hold shards 0-5, 6-10, 11-15.
      expect(slots[k]).toBeGreaterThanOrEqual(Math.floor((k * CLUSTER_SLOTS) / count));
      expect(slots[k]).toBeLessThan(Math.floor((k * CLUSTER_SLOTS) / count) + CLUSTER_SLOTS / count / 16);
      const keys = layout.keys(k);
      const tag = `{${shardTag('wgw', k, count)}}`;
      expect(layout.queuePrefix(k)).toBe(tag);
      for (const key of [keys.transaction('t'), keys.session('s'), keys.round('p', 's', 'r'), keys.pendingIndex(), keys.audit()]) expect(key.startsWith(`${tag}:`)).toBe(true);
    }
  });

  it('names the shard in session ids and token refs, and refuses ids that name none', () => {
    const layout = shardLayout('wgw', 4);
    expect(layout.shardOfId(layout.withShard('x'.repeat(22), 3))).toBe(3);
    expect(layout.shardOfId('x'.repeat(22))).toBeUndefined();
    expect(layout.shardOfId(`${'x'.repeat(22)}.4`)).toBeUndefined();
  });

  it('puts a player in one stable shard and spreads players over all of them', () => {
    const layout = shardLayout('wgw', 16);
    expect(layout.shardOfPlayer('p1', '7')).toBe(layout.shardOfPlayer('p1', '7'));
    const counts = new Array<number>(16).fill(0);
    for (let i = 0; i < 1600; i += 1) counts[layout.shardOfPlayer(`player-${i}`, '7')]! += 1;
    for (const n of counts) expect(n).toBeGreaterThan(50);
  });

  it('puts the same shards on each of 3 equal masters whatever the prefix', () => {
    const masterOf = (slot: number): number => (slot <= 5460 ? 0 : slot <= 10922 ? 1 : 2);
    for (const prefix of ['wgw', 'wgw-run-7-a1b2c3', 'x']) {
      const layout = shardLayout(prefix, 16);
      expect(layout.all.map((k) => masterOf(layout.slot(k)))).toEqual([0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2]);
    }
  });

  it('refuses a prefix with braces when it adds tags of its own', () => {
    expect(() => shardLayout('{wgw}', 4)).toThrow('QUEUE_PREFIX');
  });
});
