import Redis from 'ioredis';
import { DEFAULT_TOKEN_SESSION_CAP } from '../../src/config/env';
import { walletLayout } from '../../src/registry/wallet-layout';
import { reinstateWallet, retireWallet, useOf } from '../../src/registry/wallet-retire';
import { createSessionStore } from '../../src/store/sessions';
import { newPlayerId, uniqueId } from '../support/gateway-harness';
import { deletePrefix, redisUrl, testPrefix } from '../support/prefix';

/**
 * The look at Redis before a wallet leaves the registry (contract 11), on real Redis with the
 * wallet's keys over 4 shards: every shard is marked before the sessions are counted, a launch on
 * a marked shard is refused by the session script, and a refused look takes its marks away.
 */
const prefix = testPrefix('retire');
const redis = new Redis(redisUrl());
const layout = walletLayout({ QUEUE_PREFIX: prefix, redisShards: 4 }, 'casino-r');
const other = walletLayout({ QUEUE_PREFIX: prefix, redisShards: 4 }, 'casino-s');
const sessions = createSessionStore(redis, layout, 60);
const marks = () => Promise.all(layout.all.map((shard) => redis.exists(layout.keys(shard).retired())));
const open = (playerId = newPlayerId()) => sessions.create({ token: uniqueId('tok'), playerId, siteId: '7', currency: 'EUR', gameId: 'g', balance: '10.00' }, Date.now(), DEFAULT_TOKEN_SESSION_CAP);

/** One player of each shard of the wallet. */
function playerPerShard(): string[] {
  const found = new Map<number, string>();
  while (found.size < layout.all.length) {
    const player = newPlayerId();
    found.set(layout.shardOfPlayer(player, '7'), player);
  }
  return [...found.values()];
}

afterAll(async () => {
  redis.disconnect();
  await deletePrefix(prefix);
});

describe('retireWallet', () => {
  it('an unused wallet is marked on every shard, and a launch on it is refused by the session script', async () => {
    expect(await retireWallet(redis, 'casino-r', layout)).toEqual({ ok: true });
    expect(await marks()).toEqual([1, 1, 1, 1]);
    for (const player of playerPerShard()) expect((await open(player)).kind).toBe('retired');
    expect((await useOf(redis, 'casino-r', layout)).sessions).toBe(0);
    await reinstateWallet(redis, layout);
    expect(await marks()).toEqual([0, 0, 0, 0]);
  });

  it('open sessions on any shard refuse it, counted; its marks are taken away; another wallet is not counted', async () => {
    const created = [];
    for (const player of playerPerShard()) created.push(await open(player));
    expect(created.every((c) => c.kind === 'created')).toBe(true);
    const result = await retireWallet(redis, 'casino-r', layout);
    expect(result).toEqual({ ok: false, use: { wallet: 'casino-r', sessions: 4, pending: 0, dead: 0, ending: 0, watched: 0 } });
    expect(await marks()).toEqual([0, 0, 0, 0]);
    expect((await open()).kind).toBe('created');
    expect(await useOf(redis, 'casino-s', other)).toMatchObject({ sessions: 0 });
  });

  it('pending and dead records refuse it', async () => {
    await redis.zadd(other.keys(2).pendingIndex(), Date.now(), 'tx-1');
    await redis.zadd(other.keys(3).deadIndex(), Date.now(), 'tx-2');
    expect(await retireWallet(redis, 'casino-s', other)).toEqual({ ok: false, use: { wallet: 'casino-s', sessions: 0, pending: 1, dead: 1, ending: 0, watched: 0 } });
  });

  it('a mark set before the look (the admin route) stays when the look refuses', async () => {
    await redis.set(layout.keys(1).retired(), '1');
    expect((await retireWallet(redis, 'casino-r', layout)).ok).toBe(false);
    expect(await marks()).toEqual([0, 1, 0, 0]);
    await reinstateWallet(redis, layout);
  });
});
