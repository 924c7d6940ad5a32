import { Code, WALLET_CODES, codeInfo } from '../wallet/codes';
import type { Operation } from '../wallet/protocol';

/**
 * Fault injection: armed one-shot faults (per operation, optionally per transaction), latency,
 * a seeded chaos mode and an unhealthy switch. The server asks `take()` once per parsed wallet
 * call; armed faults are used first-armed-first, chaos only when none matches.
 */
export type DropMode = 'hang' | 'reset';

export type OutageMode = 'code' | 'hang';

export interface ChaosSettings {
  seed: number;
  /** Share of debit/credit/rollback calls that get a fault, 0..1. */
  rate: number;
  /** Codes chaos answers with; default every code of the spec's plain retry class. */
  codes?: readonly number[];
}

export interface FaultController {
  /** Answer the next `count` calls of `op` (or only those of one transaction) with `code`; nothing applied. */
  failNext(op: Operation, count: number, code: number, options?: { transactionId?: string }): void;
  /** Apply the next `count` calls, then never answer (`hang`) or destroy the connection/stream (`reset`). */
  applyThenDrop(op: Operation, count: number, options: { mode: DropMode; transactionId?: string }): void;
  /** Answer the next `count` calls with HTTP 200 and a non-JSON body; nothing applied. */
  nonJson(op: Operation, count: number): void;
  /** Destroy the connection/stream of the next `count` calls without applying them. */
  reset(op: Operation, count: number): void;
  /**
   * Hold the next `count` calls of `op` (or only those of one transaction) for `ms`, then process
   * and answer them: a caller that gave up meanwhile still has the call applied, late.
   */
  delayNext(op: Operation, count: number, ms: number, options?: { transactionId?: string }): void;
  /** Delay every answer of `op` ('*': of every operation without its own setting); 0 removes it. */
  latency(op: Operation | '*', ms: number): void;
  /** Seeded random faults on debit/credit/rollback; null turns chaos off. */
  chaos(settings: ChaosSettings | null): void;
  /** Health check answers 503 while true. */
  unhealthy(value: boolean): void;
  /**
   * A wallet outage: while set, every call of the seven operations answers code 12 (`code`) or is
   * never answered (`hang`), nothing is applied, and the health check answers 503. null ends it.
   */
  down(mode: OutageMode | null): void;
  /** Removes every armed fault, latency, chaos and the unhealthy switch. */
  clear(): void;
  /** What is armed now (for the admin API and debugging). */
  snapshot(): FaultSnapshot;
}

export type FaultAction =
  | { readonly kind: 'fail'; readonly code: number }
  | { readonly kind: 'drop'; readonly mode: DropMode }
  | { readonly kind: 'nonJson' }
  | { readonly kind: 'reset' }
  | { readonly kind: 'latency'; readonly ms: number }
  /** Never answered, nothing applied (an outage). */
  | { readonly kind: 'hang' };

export interface FaultDecision {
  readonly action: FaultAction;
  readonly source: 'armed' | 'chaos' | 'outage';
}

interface ArmedFault {
  readonly op: Operation;
  readonly transactionId: string | undefined;
  readonly action: FaultAction;
  remaining: number;
}

export interface FaultSnapshot {
  readonly armed: readonly { op: Operation; transactionId: string | undefined; action: FaultAction; remaining: number }[];
  readonly latency: Readonly<Record<string, number>>;
  readonly chaos: { seed: number; rate: number; codes: readonly number[] } | null;
  readonly unhealthy: boolean;
  readonly down: OutageMode | null;
}

const CHAOS_OPERATIONS: ReadonlySet<Operation> = new Set(['debit', 'credit', 'rollback']);

/** Codes a caller retries without a cap of its own: the default chaos mix. */
export const CHAOS_DEFAULT_CODES: readonly number[] = WALLET_CODES.filter((c) => c.spec && c.retry === 'retry').map((c) => c.code);

/** mulberry32: a tiny seeded PRNG, enough for reproducible fault sequences. */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function positiveCount(count: number): number {
  if (!Number.isSafeInteger(count) || count < 1) throw new RangeError('count must be a positive integer');
  return count;
}

function nonNegativeMs(ms: number): number {
  if (!Number.isSafeInteger(ms) || ms < 0) throw new RangeError('ms must be a non-negative integer');
  return ms;
}

export function assertFaultCode(code: number): void {
  if (code === Code.Success || codeInfo(code) === undefined) throw new RangeError(`code ${code} is not a failure code of the code table`);
}

export class Faults implements FaultController {
  private armed: ArmedFault[] = [];
  private latencies = new Map<Operation | '*', number>();
  private chaosState: { settings: Required<ChaosSettings>; next: () => number } | null = null;
  private sick = false;
  private outage: OutageMode | null = null;

  failNext(op: Operation, count: number, code: number, options: { transactionId?: string } = {}): void {
    assertFaultCode(code);
    this.arm(op, count, { kind: 'fail', code }, options.transactionId);
  }

  applyThenDrop(op: Operation, count: number, options: { mode: DropMode; transactionId?: string }): void {
    this.arm(op, count, { kind: 'drop', mode: options.mode }, options.transactionId);
  }

  nonJson(op: Operation, count: number): void {
    this.arm(op, count, { kind: 'nonJson' }, undefined);
  }

  reset(op: Operation, count: number): void {
    this.arm(op, count, { kind: 'reset' }, undefined);
  }

  delayNext(op: Operation, count: number, ms: number, options: { transactionId?: string } = {}): void {
    this.arm(op, count, { kind: 'latency', ms: nonNegativeMs(ms) }, options.transactionId);
  }

  latency(op: Operation | '*', ms: number): void {
    nonNegativeMs(ms);
    if (ms === 0) this.latencies.delete(op);
    else this.latencies.set(op, ms);
  }

  chaos(settings: ChaosSettings | null): void {
    if (settings === null) {
      this.chaosState = null;
      return;
    }
    if (!(settings.rate >= 0 && settings.rate <= 1)) throw new RangeError('rate must be between 0 and 1');
    const codes = settings.codes ?? CHAOS_DEFAULT_CODES;
    if (codes.length === 0) throw new RangeError('codes must not be empty');
    codes.forEach(assertFaultCode);
    this.chaosState = { settings: { seed: settings.seed, rate: settings.rate, codes: [...codes] }, next: mulberry32(settings.seed) };
  }

  unhealthy(value: boolean): void {
    this.sick = value;
  }

  down(mode: OutageMode | null): void {
    this.outage = mode;
  }

  clear(): void {
    this.armed = [];
    this.latencies.clear();
    this.chaosState = null;
    this.sick = false;
    this.outage = null;
  }

  snapshot(): FaultSnapshot {
    const chaos = this.chaosState?.settings;
    return {
      armed: this.armed.map((f) => ({ op: f.op, transactionId: f.transactionId, action: f.action, remaining: f.remaining })),
      latency: Object.fromEntries(this.latencies),
      chaos: chaos ? { seed: chaos.seed, rate: chaos.rate, codes: chaos.codes } : null,
      unhealthy: this.sick,
      down: this.outage,
    };
  }

  // --- used by the server -------------------------------------------------------------------

  isUnhealthy(): boolean {
    return this.sick || this.outage !== null;
  }

  latencyFor(op: Operation): number {
    return this.latencies.get(op) ?? this.latencies.get('*') ?? 0;
  }

  /** The fault for this call, if any; consumes one use of an armed fault or one chaos draw. */
  take(op: Operation, transactionId: string | undefined): FaultDecision | undefined {
    if (this.outage !== null) {
      return { action: this.outage === 'code' ? { kind: 'fail', code: Code.InternalServiceError } : { kind: 'hang' }, source: 'outage' };
    }
    const index = this.armed.findIndex((f) => f.op === op && (f.transactionId === undefined || f.transactionId === transactionId));
    const fault = this.armed[index];
    if (fault) {
      fault.remaining -= 1;
      if (fault.remaining === 0) this.armed.splice(index, 1);
      return { action: fault.action, source: 'armed' };
    }
    const chaos = this.chaosState;
    if (!chaos || !CHAOS_OPERATIONS.has(op)) return undefined;
    // Always three draws per eligible call, so the same calls meet the same faults for one seed.
    const [hit, pick, param] = [chaos.next(), chaos.next(), chaos.next()];
    if (hit >= chaos.settings.rate) return undefined;
    return { action: chaosAction(pick, param, chaos.settings.codes), source: 'chaos' };
  }

  private arm(op: Operation, count: number, action: FaultAction, transactionId: string | undefined): void {
    this.armed.push({ op, transactionId, action, remaining: positiveCount(count) });
  }
}

/** The chaos mix: mostly retry codes, then lost answers, resets, junk bodies and slow answers. */
function chaosAction(pick: number, param: number, codes: readonly number[]): FaultAction {
  if (pick < 0.4) return { kind: 'fail', code: codes[Math.floor(param * codes.length)] as number };
  if (pick < 0.55) return { kind: 'drop', mode: 'reset' };
  if (pick < 0.6) return { kind: 'drop', mode: 'hang' };
  if (pick < 0.75) return { kind: 'reset' };
  if (pick < 0.85) return { kind: 'nonJson' };
  return { kind: 'latency', ms: 20 + Math.floor(param * 280) };
}
