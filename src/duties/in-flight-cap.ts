import { randomUUID } from 'node:crypto';
import type { Metrics } from '../observability/metrics';
import { createInFlightPresence, type PresenceKeys } from '../store/in-flight-presence';
import type { RedisClient } from '../store/redis';

/**
 * A wallet's `max_in_flight` (contract 11) as this process's share of it: the cap divided by the
 * processes that serve the wallet now, at least one call each. The processes are counted by
 * presence in Redis (a ZSET of process id → until when it counts), renewed every REFRESH_MS off the
 * hot path; a process that dies drops out when its presence runs out (PRESENCE_MS), one that stops
 * leaves at once. A call takes a slot of the share in memory: no Redis round trip per call
 * (docs/background.md, "max_in_flight"). Each renewal also publishes the calls this process has
 * open at the wallet, so operators see the wallet's calls in flight over the whole deployment.
 */
export interface InFlightCap {
  /**
   * Takes a slot for a wallet call; false: this process's share is in use (over the cap), counted
   * by `call`: a bet refused (`debit`), a win or refund queued instead (`inline`), a retry that waits.
   */
  tryTake(call: CapCall): boolean;
  /** Gives a taken slot back (the call ended). */
  give(): void;
  /** Slots this process may hold now. */
  share(): number;
  /** The calls open at the wallet over every live process: each other one's as of its last renewal, this one's now. */
  deploymentCalls(): Promise<number>;
  /** Starts renewing this process's presence and reading the others'. */
  start(): void;
  /** Stops renewing and leaves, so the others' shares grow at their next refresh. */
  close(): Promise<void>;
}

export type CapCall = 'debit' | 'inline' | 'retry';

export const REFRESH_MS = 1_000;
/** Three refreshes: one missed renewal (a busy event loop) does not drop a live process. */
export const PRESENCE_MS = 3 * REFRESH_MS;

export interface InFlightCapDeps {
  readonly redis: RedisClient;
  /** The wallet's presence ZSET and calls HASH (Keys.inFlightPresence, Keys.inFlightCalls). */
  readonly keys: PresenceKeys;
  readonly maxInFlight: number;
  /** The calls this process has open at the wallet now (published with its presence). */
  readonly openCalls: () => number;
  /** The wallet's view of the series (walletMetrics): refusals are counted in it. */
  readonly metrics?: Metrics;
  readonly now?: () => number;
  /** A refresh that failed (Redis away): the share stays what it was. */
  readonly onError?: (err: unknown) => void;
}

export function createInFlightCap(deps: InFlightCapDeps): InFlightCap {
  const { maxInFlight, openCalls, metrics } = deps;
  const now = deps.now ?? Date.now;
  const presence = createInFlightPresence(deps.redis, deps.keys);
  const self = randomUUID();
  // Until the first count this process is taken to be alone; the first refresh runs at start.
  let processes = 1;
  let taken = 0;
  let timer: NodeJS.Timeout | undefined;
  let refreshing: Promise<void> | undefined;

  const share = (): number => Math.max(1, Math.floor(maxInFlight / processes));

  async function refresh(): Promise<void> {
    // One key pair, one round trip, atomic: renew, drop who ran out, count.
    const count = await presence.renew(self, openCalls(), now(), PRESENCE_MS);
    if (count > 0) processes = count;
  }

  const tick = (): void => {
    refreshing ??= refresh()
      .catch((err: unknown) => deps.onError?.(err))
      .finally(() => {
        refreshing = undefined;
      });
  };

  return {
    tryTake(call) {
      if (taken >= share()) {
        metrics?.walletInFlightRefused.inc({ call });
        return false;
      }
      taken += 1;
      return true;
    },
    give() {
      taken -= 1;
    },
    share,
    async deploymentCalls() {
      let sum = openCalls();
      for (const [id, calls] of await presence.calls(now())) if (id !== self) sum += calls;
      return sum;
    },
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
      await presence.leave(self).catch((err: unknown) => deps.onError?.(err));
    },
  };
}
