import type { RedisClient } from './redis';
import type { Keys } from './keys';
import { defineScript, registerScripts, runScript } from './scripts';

/**
 * The part of the breaker's policy (src/duties/breaker-policy.ts) that the shared state's one
 * atomic step enforces.
 */
export interface SharedBreakerPolicy {
  /**
   * The breaker also opens on this many failed health checks in a row, counted at most one per
   * suspectHealthIntervalMs (retries waiting for a verdict ask more often than that).
   */
  readonly healthFailures: number;
  readonly suspectHealthIntervalMs: number;
  /** The first probe after opening; each failed probe doubles it, up to maxProbeMs. */
  readonly firstProbeMs: number;
  readonly maxProbeMs: number;
  /**
   * Trials at a time while half-open: a waiting retry asks wallet `status` of its transaction (a
   * query, so a failed trial spends none of its budget); terminates are never trials. A reported
   * trial frees its slot.
   */
  readonly trials: number;
  /** Passed trials that close it. */
  readonly trialsToClose: number;
  /**
   * Failed trials of this many different transactions, and no passed one, reopen it: one
   * transaction failing again and again, or the failures a wallet that is up still has, are not the
   * outage going on; a wallet still down fails every trial.
   */
  readonly trialFailuresToOpen: number;
  /**
   * Half-open: trial slots not reported within this are given out again (their holder died, or had
   * nothing to send), and a breaker that saw passing health checks and no failed trial for this
   * long closes (there may be no retry to try with).
   */
  readonly trialWindowMs: number;
}

export type BreakerState = 'closed' | 'open' | 'half_open';

/** The shared state of the wallet circuit breaker (src/store/lua/breaker-1.lua). */
export interface BreakerView {
  readonly state: BreakerState;
  /** When an open breaker probes next (ms); null unless open. */
  readonly probeAt: number | null;
  /** When it opened (ms); null while closed. */
  readonly openedAt: number | null;
  /** When a health check last passed (ms); null if none has. */
  readonly healthOkAt: number | null;
}

export type BreakerEvent = 'open' | 'health_fail' | 'health_ok' | 'trial' | 'trial_unused' | 'trial_ok' | 'trial_fail';

export interface BreakerTransition extends BreakerView {
  readonly changed: boolean;
  /** For `trial`: whether a trial retry was granted ('go' while closed). */
  readonly trial: 'go' | 'trial' | 'wait';
}

export interface BreakerStore {
  read(): Promise<BreakerView>;
  /** `subject`: the transaction of a failed trial. */
  report(event: BreakerEvent, now: number, reason?: string, subject?: string): Promise<BreakerTransition>;
  /** One process at a time asks the wallet's health: true if this one holds the lease now. */
  takeHealthLease(ms: number): Promise<boolean>;
}

const breakerScript = defineScript<{ keys: Keys; event: BreakerEvent; now: number; reason: string; subject: string; policy: SharedBreakerPolicy }>(
  'breaker-1',
  ({ keys, event, now, reason, subject, policy }) => ({
    keys: [keys.breaker()],
    args: [
      event,
      String(now),
      reason,
      String(policy.healthFailures),
      String(policy.trials),
      String(policy.firstProbeMs),
      String(policy.maxProbeMs),
      String(policy.trialWindowMs),
      String(policy.trialsToClose),
      String(policy.trialFailuresToOpen),
      subject,
      String(policy.suspectHealthIntervalMs),
    ],
  }),
);

const num = (text: string | undefined | null): number | null => (text === undefined || text === null || text === '' ? null : Number(text));

export function createBreakerStore(redis: RedisClient, keys: Keys, policy: SharedBreakerPolicy): BreakerStore {
  registerScripts(redis, [breakerScript]);
  return {
    async read() {
      const [state, probeAt, openedAt, healthOkAt] = await redis.hmget(keys.breaker(), 'state', 'probe_at', 'opened_at', 'health_ok_at');
      const s = (state ?? 'closed') as BreakerState;
      return { state: s, probeAt: s === 'open' ? num(probeAt) : null, openedAt: s === 'closed' ? null : num(openedAt), healthOkAt: num(healthOkAt) };
    },

    async report(event, now, reason = '', subject = '') {
      const [state, probeAt, openedAt, changed, trial, healthOkAt] = (await runScript(redis, breakerScript, { keys, event, now, reason, subject, policy })) as [
        BreakerState,
        string,
        string,
        number,
        string,
        string,
      ];
      return { state, probeAt: num(probeAt), openedAt: num(openedAt), changed: changed === 1, trial: trial === '' ? 'go' : (trial as 'trial' | 'wait'), healthOkAt: num(healthOkAt) };
    },

    async takeHealthLease(ms) {
      return (await redis.set(keys.breakerHealthLease(), '1', 'PX', ms, 'NX')) === 'OK';
    },
  };
}
