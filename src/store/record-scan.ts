import type { RedisClient } from './redis';
import type { Keys } from './keys';
import type { ShardLayout } from './shards';
import { decodeRecord } from './record-codec';
import type { TransactionRecord } from './types';
import { PLAYER_RECENT_CAP } from './record-indexes';

/**
 * Reads for the operators' console, in pages: never a whole index at once. The time index and a
 * player's recent records are written by the claim (src/store/lua/includes/record-indexes.lua).
 * Each shard has its own indexes; the lists read them shard by shard (the time index merged in
 * time order), a pipeline never spans two shards (two slots).
 */

/** Records' hashes as Redis holds them, in one pipeline (an expired record: an empty hash). */
export async function readRecordHashes(redis: RedisClient, keys: Keys, ids: readonly string[]): Promise<Record<string, string>[]> {
  if (ids.length === 0) return [];
  const pipeline = redis.pipeline();
  for (const id of ids) pipeline.hgetall(keys.transaction(id));
  const replies = (await pipeline.exec()) ?? [];
  return replies.map(([error, hash]) => {
    if (error) throw error;
    return hash as Record<string, string>;
  });
}

/** One page's records, read in one pipeline; ids whose record expired meanwhile are left out. */
export async function readRecords(redis: RedisClient, keys: Keys, ids: readonly string[]): Promise<TransactionRecord[]> {
  return (await readRecordHashes(redis, keys, ids)).flatMap((hash) => decodeRecord(hash) ?? []);
}

/**
 * Every member of a ZSET with a score in [from, to], in score order, `pageSize` at a time. Pages
 * continue from the last score seen (not an offset), so a long window costs O(log n) per page.
 */
export async function* zsetPages(redis: RedisClient, key: string, from: number, to: number, pageSize: number): AsyncGenerator<string[]> {
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

async function* shardCreatedIn(redis: RedisClient, keys: Keys, from: number, to: number, pageSize: number): AsyncGenerator<TransactionRecord[]> {
  for await (const ids of zsetPages(redis, keys.timeIndex(), from, to, pageSize)) yield readRecords(redis, keys, ids);
}

/** The records created in [from, to] (ms), oldest first over all shards, in pages. */
export async function* recordsCreatedIn(redis: RedisClient, layout: ShardLayout, from: number, to: number, pageSize = 200): AsyncGenerator<TransactionRecord[]> {
  const sources = layout.all.map((shard) => ({ pages: shardCreatedIn(redis, layout.keys(shard), from, to, pageSize), buffer: [] as TransactionRecord[], done: false }));
  for (;;) {
    // Every shard with records left shows its next one; the oldest of those goes out first.
    for (const source of sources) {
      while (!source.done && source.buffer.length === 0) {
        const next = await source.pages.next();
        if (next.done) source.done = true;
        else source.buffer.push(...next.value);
      }
    }
    const page: TransactionRecord[] = [];
    while (page.length < pageSize) {
      let oldest: (typeof sources)[number] | undefined;
      for (const source of sources) {
        if (source.buffer.length > 0 && (oldest === undefined || source.buffer[0]!.createdAt < oldest.buffer[0]!.createdAt)) oldest = source;
      }
      if (oldest === undefined) break;
      page.push(oldest.buffer.shift()!);
      // A shard whose buffer ran dry may hold older records than the others' next: refill first.
      if (oldest.buffer.length === 0 && !oldest.done) break;
    }
    if (page.length === 0) return;
    yield page;
  }
}

/** Every record of an index ZSET (pending, dead) of every shard, in pages, shard by shard, by score within a shard. */
export async function* recordsOfIndex(redis: RedisClient, layout: ShardLayout, index: 'pending' | 'dead', pageSize = 200): AsyncGenerator<TransactionRecord[]> {
  for (const shard of layout.all) {
    const keys = layout.keys(shard);
    const key = index === 'pending' ? keys.pendingIndex() : keys.deadIndex();
    for await (const ids of zsetPages(redis, key, -Infinity, Infinity, pageSize)) yield readRecords(redis, keys, ids);
  }
}

/**
 * A player's newest records, newest first: at most PLAYER_RECENT_CAP, though the index may hold a
 * few more between its trims (src/store/record-indexes.ts).
 */
export async function playerRecentRecords(redis: RedisClient, layout: ShardLayout, playerId: string, siteId: string, limit: number): Promise<TransactionRecord[]> {
  const keys = layout.keys(layout.shardOfPlayer(playerId, siteId));
  return readRecords(redis, keys, await redis.zrevrange(keys.playerRecent(playerId, siteId), 0, Math.min(limit, PLAYER_RECENT_CAP) - 1));
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

/** Tokens of the ending or terminate-failed index over all shards, oldest first, at most `limit`. */
export async function endingTokens(redis: RedisClient, layout: ShardLayout, index: 'ending' | 'failed', limit: number): Promise<{ tokens: EndingToken[]; total: number }> {
  const keyOf = (keys: Keys): string => (index === 'ending' ? keys.endingIndex() : keys.terminateFailedIndex());
  const perShard = await Promise.all(
    layout.all.map(async (shard) => {
      const key = keyOf(layout.keys(shard));
      const [flat, total] = await Promise.all([redis.zrange(key, 0, limit - 1, 'WITHSCORES'), redis.zcard(key)]);
      const refs: { ref: string; since: number; keys: Keys }[] = [];
      for (let i = 0; i + 1 < flat.length; i += 2) refs.push({ ref: flat[i]!, since: Number(flat[i + 1]), keys: layout.keys(shard) });
      return { refs, total };
    }),
  );
  const refs = perShard.flatMap((s) => s.refs).sort((a, b) => a.since - b.since).slice(0, limit);
  const total = perShard.reduce((n, s) => n + s.total, 0);
  const tokens = await Promise.all(refs.map(async ({ ref: tokenRef, since, keys }) => {
    const [[playerId, siteId, state, from, attempts, lastCode], holding] = await Promise.all([
      // Named fields only: the hash also holds the wallet token, which never leaves the store.
      redis.hmget(keys.token(tokenRef), 'player_id', 'site_id', 'state', 'from', 'attempts', 'last_code'),
      redis.scard(keys.tokenPending(tokenRef)),
    ]);
    return {
      tokenRef,
      playerId: playerId ?? '',
      siteId: siteId ?? '',
      state: state ?? 'ending',
      from: from ? Number(from) : null,
      attempts: Number(attempts ?? 0),
      lastCode: lastCode ?? '',
      holding,
      since,
    };
  }));
  return { tokens, total };
}
