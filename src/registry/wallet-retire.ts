import { Cluster, type Redis } from 'ioredis';
import type { RedisClient } from '../store/redis';
import type { ShardLayout } from '../store/shards';

/**
 * The look at Redis before a wallet leaves the registry (contract 11): a wallet that still has open
 * sessions, or pending, compensating, dead, ending or watched work cannot be removed; its work
 * would be left with no lane to run it and no route to settle it.
 *
 * The race with a launch: the wallet is first marked retired on every one of its shards, then its
 * sessions are counted. create-session-4.lua refuses a launch on a shard that holds the mark, so a
 * launch either made its session before the mark (and is counted here) or gets 404 WALLET_NOT_FOUND.
 * Work comes only from sessions, so none with no session is none for good. A refused removal takes
 * the mark away again (only the marks this look set); an accepted one leaves it until a registry
 * holds the wallet again (`reinstate`).
 */
export interface WalletUse {
  readonly wallet: string;
  /** Sessions open or ending. */
  readonly sessions: number;
  /** Records pending or being compensated. */
  readonly pending: number;
  readonly dead: number;
  /** Wallet tokens whose terminate is still to run, and debits still watched with `status`. */
  readonly ending: number;
  readonly watched: number;
}

export type RetireResult = { readonly ok: true } | { readonly ok: false; readonly use: WalletUse };

const SCAN_COUNT = 1000;

export async function retireWallet(redis: RedisClient, walletId: string, layout: ShardLayout): Promise<RetireResult> {
  const setHere: number[] = [];
  for (const shard of layout.all) {
    if ((await redis.set(layout.keys(shard).retired(), '1', 'NX')) === 'OK') setHere.push(shard);
  }
  const use = await useOf(redis, walletId, layout);
  const inUse = use.sessions + use.pending + use.dead + use.ending + use.watched > 0;
  if (!inUse) return { ok: true };
  for (const shard of setHere) await redis.del(layout.keys(shard).retired());
  return { ok: false, use };
}

/** The wallet is in the registry (again): launches on it are taken. */
export async function reinstateWallet(redis: RedisClient, layout: ShardLayout): Promise<void> {
  for (const shard of layout.all) await redis.del(layout.keys(shard).retired());
}

export async function useOf(redis: RedisClient, walletId: string, layout: ShardLayout): Promise<WalletUse> {
  let pending = 0;
  let dead = 0;
  let ending = 0;
  let watched = 0;
  let sessions = 0;
  for (const shard of layout.all) {
    const keys = layout.keys(shard);
    const [p, d, e, w] = await Promise.all([redis.zcard(keys.pendingIndex()), redis.zcard(keys.deadIndex()), redis.zcard(keys.endingIndex()), redis.zcard(keys.recheckIndex())]);
    pending += p;
    dead += d;
    ending += e;
    watched += w;
    sessions += await openSessions(redis, keys.session(''));
  }
  return { wallet: walletId, sessions, pending, dead, ending, watched };
}

/**
 * Sessions are keys with a lifetime, not an index: SCAN for them (a removal is rare; the scan reads
 * the keyspace in steps and never blocks Redis). On a cluster every master holds some of them.
 * The `*` after the prefix cannot reach another wallet's keys: those are `…:w:<id>:session:…`.
 */
async function openSessions(redis: RedisClient, keyPrefix: string): Promise<number> {
  const nodes: Redis[] = redis instanceof Cluster ? redis.nodes('master') : [redis];
  let open = 0;
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, found] = await node.scan(cursor, 'MATCH', `${escapeGlob(keyPrefix)}*`, 'COUNT', SCAN_COUNT);
      cursor = next;
      if (found.length === 0) continue;
      const states = await Promise.all(found.map((key) => node.hget(key, 'state')));
      open += states.filter((s) => s === 'open' || s === 'ending').length;
    } while (cursor !== '0');
  }
  return open;
}

/** A key prefix as a SCAN pattern that matches it literally (a prefix may hold `{` `}`; ids no glob characters). */
function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}
