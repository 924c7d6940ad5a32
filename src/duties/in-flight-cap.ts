import { randomUUID } from 'node:crypto';
import type { RedisClient } from '../store/redis';

/**
 * A wallet's `max_in_flight` (contract 11) as this process's share of it: the cap divided by the
 * processes that serve the wallet now, at least one call each. The processes are counted by
 * presence in Redis (a ZSET of process id → until when it counts), renewed every REFRESH_MS off the
 * hot path; a process that dies drops out when its presence runs out (PRESENCE_MS), one that stops
 * leaves at once. A call takes a slot of the share in memory: no Redis round trip per call
 * (docs/background.md, "max_in_flight").
 */
export interface InFlightCap {
  /** Takes a slot for a wallet call; false: this process's share is in use (over the cap). */
  tryTake(): boolean;
  /** Gives a taken slot back (the call ended). */
  give(): void;
  /** Slots this process may hold now. */
  share(): number;
  /** Starts renewing this process's presence and reading the others'. */
  start(): void;
  /** Stops renewing and leaves, so the others' shares grow at their next refresh. */
  close(): Promise<void>;
}

export const REFRESH_MS = 1_000;
/** Three refreshes: one missed renewal (a busy event loop) does not drop a live process. */
export const PRESENCE_MS = 3 * REFRESH_MS;

export interface InFlightCapDeps {
  readonly redis: RedisClient;
  /** The wallet's presence ZSET (Keys.inFlightPresence). */
  readonly key: string;
  readonly maxInFlight: number;
  readonly now?: () => number;
  /** A refresh that failed (Redis away): the share stays what it was. */
  readonly onError?: (err: unknown) => void;
}

export function createInFlightCap(deps: InFlightCapDeps): InFlightCap {
  const { redis, key, maxInFlight } = deps;
  const now = deps.now ?? Date.now;
  const self = randomUUID();
  // Until the first count this process is taken to be alone; the first refresh runs at start.
  let processes = 1;
  let taken = 0;
  let timer: NodeJS.Timeout | undefined;
  let refreshing: Promise<void> | undefined;

  const share = (): number => Math.max(1, Math.floor(maxInFlight / processes));

  async function refresh(): Promise<void> {
    const at = now();
    // One key, one round trip, atomic: renew, drop who ran out, count.
    const replies = await redis.multi().zadd(key, at + PRESENCE_MS, self).zremrangebyscore(key, '-inf', at).zcard(key).pexpire(key, PRESENCE_MS).exec();
    const count = replies?.[2]?.[1];
    if (typeof count === 'number' && count > 0) processes = count;
  }

  const tick = (): void => {
    refreshing ??= refresh()
      .catch((err: unknown) => deps.onError?.(err))
      .finally(() => {
        refreshing = undefined;
      });
  };

  return {
    tryTake() {
      if (taken >= share()) return false;
      taken += 1;
      return true;
    },
    give() {
      taken -= 1;
    },
    share,
    start() {
      if (timer !== undefined) return;
      tick();
      timer = setInterval(tick, REFRESH_MS);
      timer.unref();
    },
    async close() {
      if (timer !== undefined) clearInterval(timer);
      timer = undefined;
      await refreshing;
      await redis.zrem(key, self).catch((err: unknown) => deps.onError?.(err));
    },
  };
}
