import type { RedisClient } from './redis';
import { defineScript, registerScripts, runScript } from './scripts';

/**
 * The processes serving a wallet, by presence (a ZSET of process id → until when it counts), each
 * with the calls it had open at the wallet at its last renewal (a HASH beside it). Both keys are
 * the wallet's shard 0's: one slot on a Cluster.
 */
export interface PresenceKeys {
  /** Keys.inFlightPresence */
  readonly presence: string;
  /** Keys.inFlightCalls */
  readonly calls: string;
}

const renewScript = defineScript<{ keys: PresenceKeys; now: number; self: string; calls: number; presenceMs: number }>('in-flight-presence-2', (i) => ({
  keys: [i.keys.presence, i.keys.calls],
  args: [String(i.now), i.self, String(i.calls), String(i.presenceMs)],
}));

export interface InFlightPresence {
  /** Renews `self` (counted until now + presenceMs) with its calls open; answers the processes counted now. */
  renew(self: string, calls: number, now: number, presenceMs: number): Promise<number>;
  /** The calls open per live process (as each last renewed), by process id. */
  calls(now: number): Promise<Map<string, number>>;
  /** `self` leaves at once. */
  leave(self: string): Promise<void>;
}

export function createInFlightPresence(redis: RedisClient, keys: PresenceKeys): InFlightPresence {
  registerScripts(redis, [renewScript]);
  return {
    async renew(self, calls, now, presenceMs) {
      return Number(await runScript(redis, renewScript, { keys, now, self, calls, presenceMs }));
    },
    async calls(now) {
      // One slot, one transaction: the live members and their counts as of one moment.
      const replies = await redis.multi().zrangebyscore(keys.presence, `(${now}`, '+inf').hgetall(keys.calls).exec();
      const live = (replies?.[0]?.[1] ?? []) as string[];
      const counts = (replies?.[1]?.[1] ?? {}) as Record<string, string>;
      return new Map(live.map((id) => [id, Number(counts[id] ?? 0)]));
    },
    async leave(self) {
      await redis.multi().zrem(keys.presence, self).hdel(keys.calls, self).exec();
    },
  };
}
