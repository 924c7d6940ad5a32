import type { RedisClient } from '../store/redis';
import { streamTime } from './rows';

/**
 * How far the ledger is behind, read from Redis alone (PostgreSQL may be the part that is down):
 * the entries still in the outboxes (drained entries are deleted), and the age of the oldest.
 */
export interface LedgerLag {
  readonly outboxLength: number;
  /** Seconds since the oldest change not yet in PostgreSQL was made; 0 when the outboxes are empty. */
  readonly lagSeconds: number;
}

export async function ledgerLag(redis: RedisClient, outboxKeys: readonly string[], now: number): Promise<LedgerLag> {
  const perKey = await Promise.all(
    outboxKeys.map(async (key) => {
      const [length, first] = await Promise.all([redis.xlen(key), redis.xrange(key, '-', '+', 'COUNT', 1)]);
      return { length, oldest: first[0] === undefined ? undefined : streamTime(first[0][0]) };
    }),
  );
  const oldest = Math.min(...perKey.map((k) => k.oldest ?? Number.POSITIVE_INFINITY));
  return {
    outboxLength: perKey.reduce((sum, k) => sum + k.length, 0),
    lagSeconds: Number.isFinite(oldest) ? Math.max(0, (now - oldest) / 1000) : 0,
  };
}
