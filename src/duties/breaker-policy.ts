import type { SharedBreakerPolicy } from '../store/breaker';
import { signalsOutage } from '../wallet/codes';
import type { WalletCallEvent } from '../wallet/protocol';
import type { AttemptResult } from './retry-policy';

/**
 * When the wallet circuit breaker opens, probes and closes (docs/background.md, "Wallet outages").
 * Pure: numbers and the sliding window only; the shared state lives in Redis (src/store/breaker.ts)
 * and the process side in src/duties/wallet-breaker.ts.
 */
export interface BreakerPolicy extends SharedBreakerPolicy {
  /** The sliding window of wallet calls each process keeps. */
  readonly windowMs: number;
  /** Opens only on at least this many failing calls in the window … */
  readonly minFailures: number;
  /** … spread over at least this many different transactions (one stuck transaction is not an outage) … */
  readonly minSubjects: number;
  /** … making at least this share of the window's calls. */
  readonly failureRatio: number;
  /** How often one process (a lease) asks the wallet's health check while the breaker is closed. */
  readonly healthIntervalMs: number;
  /**
   * A gateway whose window shows the first signs (this many failing calls over two transactions)
   * asks the health check every second instead, without the lease: an outage whose health check
   * fails is then confirmed within seconds, before the first wins of it have spent their budget.
   */
  readonly suspectFailures: number;
  readonly suspectHealthIntervalMs: number;
}

export const BREAKER_POLICY: BreakerPolicy = Object.freeze({
  windowMs: 10_000,
  minFailures: 10,
  minSubjects: 5,
  failureRatio: 0.6,
  healthFailures: 3,
  healthIntervalMs: 5_000,
  suspectFailures: 3,
  suspectHealthIntervalMs: 1_000,
  firstProbeMs: 5_000,
  maxProbeMs: 30_000,
  trials: 5,
  trialsToClose: 3,
  trialFailuresToOpen: 5,
  trialWindowMs: 15_000,
});

/**
 * Whether one wallet call is evidence of an outage: an unknown outcome (timeout, reset,
 * unparseable) or a code the table marks (2, 12, 13, 29, 42). A refusal with any other code is the
 * wallet answering: evidence that it is up.
 */
export function isOutageSignal(event: Pick<WalletCallEvent, 'outcome' | 'code'>): boolean {
  if (event.outcome === 'unknown') return true;
  return event.outcome === 'rejected' && event.code !== null && signalsOutage(event.code);
}

/**
 * When a record's last try failed as an outage would (the time that failure was stored), else
 * undefined. Its next send waits for a health check that passed after it: while an outage comes on
 * (calls failing, the breaker not open yet) the retry holds the budget the outage ought to hold.
 */
export function lastOutageFailureAt(record: { readonly history: readonly AttemptResult[]; readonly updatedAt: number }): number | undefined {
  const last = record.history.at(-1);
  if (last === undefined) return undefined;
  return last === 'unknown' || isOutageSignal({ outcome: 'rejected', code: last }) ? record.updatedAt : undefined;
}

/** Delay before the probe after the n-th consecutive opening (n ≥ 1). */
export function probeDelayMs(openings: number, policy: BreakerPolicy = BREAKER_POLICY): number {
  return Math.min(policy.maxProbeMs, policy.firstProbeMs * 2 ** Math.max(0, openings - 1));
}

interface Sample {
  readonly at: number;
  readonly failed: boolean;
  /** The transaction id, or the operation for calls without one. */
  readonly subject: string;
}

export interface WindowVerdict {
  readonly open: boolean;
  readonly calls: number;
  readonly failures: number;
  readonly subjects: number;
}

/**
 * One process's sliding window of wallet calls. Every call is recorded and judged (the gateway's
 * hot path), so both are O(1) amortised: running counts, updated as samples enter and leave,
 * instead of a pass over the window's thousands of samples per call.
 */
export class OutcomeWindow {
  private samples: Sample[] = [];
  /** Index of the oldest sample still in the window; the array is compacted once half of it is dead. */
  private head = 0;
  private failures = 0;
  /** Failing samples in the window per subject. */
  private readonly failingSubjects = new Map<string, number>();

  constructor(private readonly policy: BreakerPolicy = BREAKER_POLICY) {}

  record(at: number, failed: boolean, subject: string): void {
    this.samples.push({ at, failed, subject });
    if (!failed) return;
    this.failures += 1;
    this.failingSubjects.set(subject, (this.failingSubjects.get(subject) ?? 0) + 1);
  }

  verdict(now: number): WindowVerdict {
    this.forgetBefore(now - this.policy.windowMs);
    const calls = this.samples.length - this.head;
    const failures = this.failures;
    const subjects = this.failingSubjects.size;
    const open = failures >= this.policy.minFailures && subjects >= this.policy.minSubjects && failures >= this.policy.failureRatio * calls;
    return { open, calls, failures, subjects };
  }

  clear(): void {
    this.samples = [];
    this.head = 0;
    this.failures = 0;
    this.failingSubjects.clear();
  }

  private forgetBefore(from: number): void {
    while (this.head < this.samples.length && this.samples[this.head]!.at < from) {
      const old = this.samples[this.head]!;
      this.head += 1;
      if (!old.failed) continue;
      this.failures -= 1;
      const left = this.failingSubjects.get(old.subject)! - 1;
      if (left === 0) this.failingSubjects.delete(old.subject);
      else this.failingSubjects.set(old.subject, left);
    }
    if (this.head > 1024 && this.head * 2 > this.samples.length) {
      this.samples = this.samples.slice(this.head);
      this.head = 0;
    }
  }
}
