import type Redis from 'ioredis';
import type { Keys } from './keys';
import { decodeRecord } from './record-codec';
import type { TransactionRecord } from './types';

/**
 * Reads for the operators' console, in pages: never a whole index at once. The time index and a
 * player's recent records are written by the claim (src/store/lua/includes/record-indexes.lua).
 */

/** One page's records, read in one pipeline; ids whose record expired meanwhile are left out. */
export async function readRecords(redis: Redis, keys: Keys, ids: readonly string[]): Promise<TransactionRecord[]> {
  if (ids.length === 0) return [];
  const pipeline = redis.pipeline();
  for (const id of ids) pipeline.hgetall(keys.transaction(id));
  const replies = (await pipeline.exec()) ?? [];
  const out: TransactionRecord[] = [];
  for (const [error, hash] of replies) {
    if (error) throw error;
    const record = decodeRecord(hash as Record<string, string>);
    if (record !== undefined) out.push(record);
  }
  return out;
}

/**
 * Every member of a ZSET with a score in [from, to], in score order, `pageSize` at a time. Pages
 * continue from the last score seen (not an offset), so a long window costs O(log n) per page.
 */
export async function* zsetPages(redis: Redis, key: string, from: number, to: number, pageSize: number): AsyncGenerator<string[]> {
  const bound = (n: number): string => (n === -Infinity ? '-inf' : n === Infinity ? '+inf' : String(n));
  let min = bound(from);
  // Members already given at the score the next page starts from (ties at a page boundary).
  let atMin = new Set<string>();
  for (;;) {
    const flat = await redis.zrangebyscore(key, min, bound(to), 'WITHSCORES', 'LIMIT', 0, pageSize + atMin.size);
    const page: string[] = [];
    let lastScore = min;
    const atLast = new Set<string>();
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const id = flat[i]!;
      const score = flat[i + 1]!;
      if (score === min && atMin.has(id)) continue;
      if (score !== lastScore) atLast.clear();
      lastScore = score;
      atLast.add(id);
      page.push(id);
    }
    if (page.length === 0) return;
    yield page;
    if (flat.length / 2 < pageSize + atMin.size) return;
    atMin = lastScore === min ? new Set([...atMin, ...atLast]) : atLast;
    min = lastScore;
  }
}

/** The records created in [from, to] (ms), oldest first, in pages. */
export async function* recordsCreatedIn(redis: Redis, keys: Keys, from: number, to: number, pageSize = 200): AsyncGenerator<TransactionRecord[]> {
  for await (const ids of zsetPages(redis, keys.timeIndex(), from, to, pageSize)) yield readRecords(redis, keys, ids);
}

/** Every record of an index ZSET (pending, dead), in pages, by score. */
export async function* recordsOfIndex(redis: Redis, keys: Keys, index: string, pageSize = 200): AsyncGenerator<TransactionRecord[]> {
  for await (const ids of zsetPages(redis, index, -Infinity, Infinity, pageSize)) yield readRecords(redis, keys, ids);
}

/** A player's newest records (at most PLAYER_RECENT_CAP are indexed), newest first. */
export async function playerRecentRecords(redis: Redis, keys: Keys, playerId: string, siteId: string, limit: number): Promise<TransactionRecord[]> {
  return readRecords(redis, keys, await redis.zrevrange(keys.playerRecent(playerId, siteId), 0, limit - 1));
}

/** What operators see of a wallet token waiting for (or given up on) its terminate: never the token. */
export interface EndingToken {
  readonly tokenRef: string;
  readonly playerId: string;
  readonly siteId: string;
  /** absent: still deciding (sessions or work hold it); terminating; terminated. */
  readonly state: string;
  /** When its terminate was decided (ms), or null. */
  readonly from: number | null;
  readonly attempts: number;
  readonly lastCode: string;
  /** Records of the token still pending or dead (what holds it). */
  readonly holding: number;
  /** The index score: next check (ending) or when it was given up (failed). */
  readonly since: number;
}

/** Tokens of the ending or terminate-failed index, oldest first, at most `limit`. */
export async function endingTokens(redis: Redis, keys: Keys, index: 'ending' | 'failed', limit: number): Promise<{ tokens: EndingToken[]; total: number }> {
  const key = index === 'ending' ? keys.endingIndex() : keys.terminateFailedIndex();
  const [flat, total] = await Promise.all([redis.zrange(key, 0, limit - 1, 'WITHSCORES'), redis.zcard(key)]);
  const refs: [string, number][] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) refs.push([flat[i]!, Number(flat[i + 1])]);
  const pipeline = redis.pipeline();
  for (const [ref] of refs) {
    // Named fields only: the hash also holds the wallet token, which never leaves the store.
    pipeline.hmget(keys.token(ref), 'player_id', 'site_id', 'state', 'from', 'attempts', 'last_code');
    pipeline.scard(keys.tokenPending(ref));
  }
  const replies = (await pipeline.exec()) ?? [];
  const tokens = refs.map(([tokenRef, since], i) => {
    const [playerId, siteId, state, from, attempts, lastCode] = (replies[2 * i]?.[1] as (string | null)[]) ?? [];
    return {
      tokenRef,
      playerId: playerId ?? '',
      siteId: siteId ?? '',
      state: state ?? 'ending',
      from: from ? Number(from) : null,
      attempts: Number(attempts ?? 0),
      lastCode: lastCode ?? '',
      holding: Number(replies[2 * i + 1]?.[1] ?? 0),
      since,
    };
  });
  return { tokens, total };
}
