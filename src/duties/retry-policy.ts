import type { RetryPlan } from '../store/transactions';
import { WALLET_CODES, isSuccess, retryClass } from '../wallet/codes';

/** What one wallet attempt came back with: its result code, or `unknown` (timeout, reset, unparseable). */
export type AttemptResult = number | 'unknown';

export type DelayUnit = 'ms' | 's';

export const MAX_RETRIES = 10;
export const MAX_LIMITED_RETRIES = 3;

export type RetryDecision =
  | { readonly retry: true; readonly n: number; readonly delayMs: number }
  | { readonly retry: false; readonly reason: StopReason };

export type StopReason =
  | 'succeeded'
  /** the last answer is a code the spec does not list for retry */
  | 'final-code'
  /** 10 retries made */
  | 'retries-exhausted'
  /** 3 retries caused by 34/39 made, and the last answer was 34/39 again */
  | 'limited-retries-exhausted';

/** The spec's delay before retry n (n ≥ 1): round(1000·log10(n+1)), in the configured unit. */
export function retryDelayMs(n: number, unit: DelayUnit): number {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`retry number must be an integer ≥ 1, got ${n}`);
  const value = Math.round(1000 * Math.log10(n + 1));
  return unit === 's' ? value * 1000 : value;
}

/**
 * The credit/rollback retry duty as a pure function. `history` holds every attempt's result in
 * order, the first (possibly inline) attempt included. Retry n is caused by the answer of attempt n.
 */
export function decideRetry(history: readonly AttemptResult[], unit: DelayUnit): RetryDecision {
  const last = history.at(-1);
  if (last === undefined) throw new RangeError('decideRetry needs at least one attempt');
  if (last !== 'unknown' && isSuccess(last)) return { retry: false, reason: 'succeeded' };

  const cls = last === 'unknown' ? 'retry' : retryClass(last);
  if (cls === 'none') return { retry: false, reason: 'final-code' };

  const retriesMade = history.length - 1;
  if (retriesMade >= MAX_RETRIES) return { retry: false, reason: 'retries-exhausted' };
  if (cls === 'limited') {
    const limitedCaused = history.filter((r) => r !== 'unknown' && retryClass(r) === 'limited').length;
    if (limitedCaused > MAX_LIMITED_RETRIES) return { retry: false, reason: 'limited-retries-exhausted' };
  }
  const n = retriesMade + 1;
  return { retry: true, n, delayMs: retryDelayMs(n, unit) };
}

export function retryPlan(unit: DelayUnit): RetryPlan {
  return {
    plainRetryCodes: WALLET_CODES.filter((c) => retryClass(c.code) === 'retry').map((c) => c.code),
    delaysMs: Array.from({ length: MAX_RETRIES }, (_, i) => retryDelayMs(i + 1, unit)),
    outageCodes: WALLET_CODES.filter((c) => c.outage).map((c) => c.code),
  };
}
