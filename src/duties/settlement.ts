import { codedError } from '../lib/error-codes';
import type { SettleUpdate } from '../store/transactions';
import { BET_NEVER_APPLIED_NOTE, NOTHING_REVERSED_NOTE, type AttemptLogEntry, type TransactionError, type TransactionRecord, type TransactionState } from '../store/types';
import { Code, codeName, httpStatusForRefusal, mustCompensateDebit, retryClass } from '../wallet/codes';
import { outcomeResult, type WalletOutcome } from '../wallet/protocol';
import { compensationTransactionId } from './compensation-id';
import { decideRetry, type AttemptResult, type DelayUnit } from './retry-policy';

/**
 * What one wallet attempt means for a transaction record: the store update and the next step.
 * Pure. Two decisions, each exhaustive by type: the gateway's inline first attempt (before the
 * engine is answered) and the worker's retries (after it was answered `202`), so both read the
 * spec's duties the same way but each can only get what it can act on.
 */
interface AttemptBase {
  readonly outcome: WalletOutcome;
  readonly unit: DelayUnit;
  readonly now: number;
}

export interface InlineAttemptInput extends AttemptBase {
  readonly record: Pick<TransactionRecord, 'kind'>;
  /** An engine refund whose try failed: its bet is refused for good (read by the caller then). */
  readonly betRefused?: boolean;
}

export interface RetryAttemptInput extends AttemptBase {
  /** Retry jobs carry credits and rollbacks only: a debit is never sent twice. */
  readonly record: {
    readonly kind: 'credit' | 'rollback';
    readonly isCompensation: boolean;
    readonly transactionId: string;
    readonly referenceTransactionId: string | null;
  };
  /** Results of the earlier attempts since the last (re)drive, in order. */
  readonly priorHistory: readonly AttemptResult[];
  /** Wallet tries so far, this one included. */
  readonly attempts: number;
  /** An engine refund whose try failed: its bet is refused for good (read by the caller then). */
  readonly betRefused?: boolean;
  /**
   * An engine refund whose try failed: it stands in for its bet's compensation (the bet is
   * `compensating`, naming it; read by the caller then).
   */
  readonly standsIn?: boolean;
}

/** Final: succeeded, failed, dead (or a compensation found not needed). */
export interface Settle {
  readonly kind: 'settle';
  readonly update: SettleUpdate;
}

/** Still pending: store the update, then (re)queue the job to run after delayMs. */
export interface Retry {
  readonly kind: 'retry';
  readonly update: SettleUpdate;
  readonly delayMs: number;
}

/** A debit the spec says to roll back: refuse it to the engine and start its compensation. */
export interface Compensate {
  readonly kind: 'compensate';
  readonly error: TransactionError;
  readonly progress: Progress;
}

export type InlineNext = Settle | Retry | Compensate;

/**
 * The answers leave it open whether the wallet applied something: ask wallet `status` first.
 * `debit`: a compensation rollback kept answering 34/39 — was the debit it undoes ever applied?
 * `self`: a final refusal came after an attempt whose outcome was unknown — was that attempt
 * applied? (A wallet may refuse the repeat of a transaction it already holds.) `notApplied` is the
 * update the refusal alone would have made.
 */
export interface Triage {
  readonly kind: 'triage';
  readonly target: 'debit' | 'self';
  readonly progress: Progress;
  readonly notApplied: SettleUpdate;
  /**
   * A debit's first compensation: when status says the debit is applied, or gives no clear answer,
   * the debit is watched instead of handed to an operator (its re-checks roll it back with a second
   * id once it shows up applied; contract 5.4).
   */
  readonly onDoubt?: SettleUpdate;
}

export interface Progress {
  readonly attempts: number;
  readonly lastWalletCode: number | null;
  readonly history: readonly AttemptResult[];
  /** The attempt for the record's attempt log. */
  readonly attempt: AttemptLogEntry;
}

/** One attempt as the operators' attempt log keeps it: when its answer came, the code, latency, the wallet's request id. */
export function attemptOf(outcome: WalletOutcome, now: number): AttemptLogEntry {
  const walletRequestId = outcome.kind === 'ok' ? outcome.response.request_id : outcome.kind === 'rejected' ? (outcome.walletRequestId ?? null) : null;
  return { at: now, result: outcomeResult(outcome), latencyMs: outcome.latencyMs, walletRequestId };
}

/** After a retry: the answers may leave it open whether the wallet applied something. */
export type RetryNext = Settle | Retry | Triage;

/** The contract's error for a refused or unknown wallet outcome. */
export function errorFor(outcome: WalletOutcome): TransactionError {
  switch (outcome.kind) {
    case 'rejected':
      return codedError('WALLET_REJECTED', {
        walletCode: outcome.code,
        message: `${codeName(outcome.code)}: ${outcome.message}`.trim(),
        httpStatus: httpStatusForRefusal(outcome.code),
      });
    case 'unknown':
      return codedError('WALLET_UNAVAILABLE', { message: `wallet outcome unknown (${outcome.reason})` });
    case 'ok':
      throw new TypeError('a successful outcome has no error');
  }
}

const STOP_NOTES = {
  'retries-exhausted': 'retries exhausted: 10 retries made',
  'limited-retries-exhausted': 'retries exhausted: 3 retries caused by codes 34/39 made',
} as const;

/**
 * A debit refused before it was sent (the wallet circuit breaker is open): nothing reached the
 * wallet, so nothing is compensated, and a repeat of the bet is claimed afresh.
 */
export function refusedUnsent(error: TransactionError): SettleUpdate {
  return { expect: ['pending'], state: 'failed', error, releaseRound: true, attempts: 0 };
}

/** Time past the end of an inline call's own deadlines before anyone else may take the record over. */
export const LEASE_MARGIN_MS = 5_000;

/**
 * How long after its claim the gateway's inline first try may still be at the wallet: the
 * write-ahead `WAIT` (when replicas are asked for), the wallet call, and the margin. The claim's
 * lease (the sweeper) and a job queued for the record meanwhile leave it alone until then.
 */
export function inlineCallWindowMs(settings: { readonly WALLET_TIMEOUT_MS: number; readonly REDIS_MIN_REPLICAS: number; readonly REDIS_WAIT_MS: number }): number {
  return (settings.REDIS_MIN_REPLICAS > 0 ? settings.REDIS_WAIT_MS : 0) + settings.WALLET_TIMEOUT_MS + LEASE_MARGIN_MS;
}

/**
 * The gateway makes this record's first try itself, inline, right after its claim: it is not a held
 * round closer, not a call queued unsent, not a compensation (only workers send those, counting the
 * try first). With no attempt recorded yet, that try may still be out, or was lost with its process.
 */
export function firstTryIsInline(record: Pick<TransactionRecord, 'deferred' | 'queued' | 'isCompensation'>): boolean {
  return !record.deferred && !record.queued && !record.isCompensation;
}

/** The first attempt, made inline before the engine is answered: a refusal here is the engine's answer. */
export function afterInlineAttempt(input: InlineAttemptInput): InlineNext {
  const { record, outcome } = input;
  const result = outcomeResult(outcome);
  const history = [result];
  const lastWalletCode = result === 'unknown' ? null : result;
  const attempt = attemptOf(outcome, input.now);
  const base = { expect: ['pending'] as TransactionState[], attempts: 1, lastWalletCode, history, attempt };

  // A refund the bet's compensation was linked to while it was out compensates that bet at once.
  if (outcome.kind === 'ok') return { kind: 'settle', update: succeeded(base, outcome.response.balance, record.kind === 'rollback') };
  if (record.kind === 'rollback' && input.betRefused === true) return { kind: 'settle', update: nothingToReverse(base) };
  const refused: Settle = { kind: 'settle', update: { ...base, state: 'failed', error: errorFor(outcome), releaseRound: true } };
  if (record.kind === 'debit') {
    if (outcome.kind === 'unknown' || mustCompensateDebit(outcome.code)) {
      return { kind: 'compensate', error: errorFor(outcome), progress: { attempts: 1, lastWalletCode, history, attempt } };
    }
    return refused;
  }
  const decision = decideRetry(history, input.unit);
  if (decision.retry) return { kind: 'retry', delayMs: decision.delayMs, update: { ...base, state: 'pending', nextCheckAt: input.now + decision.delayMs } };
  return refused;
}

/**
 * A retry, made by a worker after the engine was answered `202` (or for a compensation the engine
 * never sees). Acknowledged work never ends `failed` (contract 5.3): whatever stops it makes it
 * `dead`, because money is owed and an operator must act.
 */
export function afterRetryAttempt(input: RetryAttemptInput): RetryNext {
  const { record, outcome, attempts, now } = input;
  const result = outcomeResult(outcome);
  const history = [...input.priorHistory, result];
  const lastWalletCode = result === 'unknown' ? null : result;
  const attempt = attemptOf(outcome, now);
  const progress: Progress = { attempts, lastWalletCode, history, attempt };
  const base = { expect: ['pending'] as TransactionState[], attempts, lastWalletCode, history, attempt };
  // A rollback may stand in for a debit's compensation; the store applies debitState only then.
  const debitState = (state: TransactionState): { debitState?: TransactionState } =>
    record.kind === 'rollback' ? { debitState: state } : {};
  const dead = (note: string): SettleUpdate => ({ ...base, state: 'dead', error: errorFor(outcome), note, ...debitState('dead') });

  if (outcome.kind === 'ok') return { kind: 'settle', update: succeeded(base, outcome.response.balance, record.kind === 'rollback') };
  if (record.kind === 'rollback' && !record.isCompensation && input.betRefused === true) return { kind: 'settle', update: nothingToReverse(base) };

  const decision = decideRetry(history, input.unit);
  if (decision.retry) {
    return { kind: 'retry', delayMs: decision.delayMs, update: { ...base, state: 'pending', nextCheckAt: now + decision.delayMs } };
  }
  switch (decision.reason) {
    case 'succeeded':
      throw new TypeError('the policy read a refusal as a success');
    case 'final-code': {
      const refused = dead(
        record.isCompensation
          ? // A compensation refused for good leaves the money the debit took stuck (contract 5.9).
            `compensation refused with code ${lastWalletCode} (${codeName(lastWalletCode ?? Code.UnknownError)})`
          : `refused with code ${lastWalletCode} (${codeName(lastWalletCode ?? Code.UnknownError)}) after the engine was answered`,
      );
      if (input.priorHistory.includes('unknown')) return { kind: 'triage', target: 'self', progress, notApplied: refused };
      return { kind: 'settle', update: refused };
    }
    case 'retries-exhausted':
    case 'limited-retries-exhausted':
      // A compensation whose last answer says the debit is not there (34/39) ends as contract 5.4
      // has it, through `status`, whichever cap ran out: tries its debit's outage or faults took
      // before must not turn "not there" into dead.
      // An engine refund standing in for that compensation asks the same: a bet the wallet never
      // applied leaves it nothing to reverse. Not its doubts: "applied" or no clear answer keeps it
      // dead, since an acknowledged refund may be neither failed nor succeeded while the bet may be held.
      if (lastWalletCode !== null && retryClass(lastWalletCode) === 'limited' && input.standsIn === true && !record.isCompensation) {
        return { kind: 'triage', target: 'debit', progress, notApplied: betNeverApplied(base) };
      }
      if (record.isCompensation && lastWalletCode !== null && retryClass(lastWalletCode) === 'limited') {
        const notApplied: SettleUpdate = {
          ...base,
          state: 'failed',
          note: 'not needed: the wallet reports the debit was never applied (status)',
          debitState: 'compensated',
        };
        const first = record.referenceTransactionId !== null && record.transactionId === compensationTransactionId(record.referenceTransactionId);
        const onDoubt: SettleUpdate | undefined = first ? { ...notApplied, note: 'the rollback answered 34/39 and status did not say the debit is absent: the debit is watched' } : undefined;
        return { kind: 'triage', target: 'debit', progress, notApplied, ...(onDoubt === undefined ? {} : { onDoubt }) };
      }
      return { kind: 'settle', update: dead(STOP_NOTES[decision.reason]) };
  }
}

type AttemptFields = Pick<SettleUpdate, 'expect' | 'attempts' | 'lastWalletCode' | 'history' | 'attempt'>;

/**
 * A debit the wallet refused for good (or an operator found never applied): it took no money. A
 * refund refused unsent as not durable is no such refusal: its repeat is claimed afresh.
 */
export function isRefusedForGood(debit: Pick<TransactionRecord, 'kind' | 'state' | 'reclaimable'> | undefined): boolean {
  return debit !== undefined && debit.kind === 'debit' && debit.state === 'failed' && !debit.reclaimable;
}

/**
 * An engine refund of a bet refused for good has nothing to reverse, whatever the wallet said of
 * its rollback: it ends succeeded, saying so (contract 5.3: acknowledged work never ends failed, and
 * a succeeded record says 1). The store applies it only while the bet is still refused for good.
 */
function nothingToReverse(base: AttemptFields): SettleUpdate {
  return { ...base, state: 'succeeded', lastWalletCode: Code.Success, error: null, note: NOTHING_REVERSED_NOTE, onlyIfBetRefused: true };
}

/**
 * An engine refund standing in for its bet's compensation, whose bet wallet `status` found never
 * applied: nothing to reverse, so it ends succeeded, saying so (contract 5.3), and the bet
 * `compensated`, watched as its compensation would leave it (contract 5.4). The store applies it
 * only while the bet still names this refund as its compensation.
 */
function betNeverApplied(base: AttemptFields): SettleUpdate {
  return { ...base, state: 'succeeded', lastWalletCode: Code.Success, error: null, note: BET_NEVER_APPLIED_NOTE, debitState: 'compensated', onlyIfStandsIn: true };
}

function succeeded(base: AttemptFields, balance: string, rollback: boolean): SettleUpdate {
  // The spread last (its keys are others than these): node 20's V8 adds each key written after a
  // spread through a runtime call, microseconds on every bet's path.
  return rollback
    ? { state: 'succeeded', balance, sessionBalance: balance, error: null, debitState: 'compensated', ...base }
    : { state: 'succeeded', balance, sessionBalance: balance, error: null, ...base };
}

/**
 * What wallet `status` decides after a triage. Not applied → the update the answers alone made
 * (`notApplied`). Applied → for `self` the transaction succeeded; for `debit` the debit stands and its
 * rollback cannot go through, so an operator must act. No clear answer → dead too (the dead-check
 * asks again later).
 */
export function afterTriage(triage: Triage, status: WalletOutcome): SettleUpdate {
  // The attempt itself was logged when the triage started (its progress was stored then).
  const { attempt: _logged, ...progress } = triage.progress;
  const base = { expect: ['pending'] as TransactionState[], ...progress };
  const rollbackOf = triage.notApplied.debitState !== undefined;
  const inconclusive = (): SettleUpdate => ({
    ...base,
    state: 'dead',
    note: `status check was inconclusive (${status.kind === 'rejected' ? `code ${status.code}` : status.kind === 'unknown' ? status.reason : 'ok'})`,
    ...(rollbackOf ? { debitState: 'dead' as const } : {}),
  });
  const said = status.kind === 'rejected' ? `code ${status.code}` : status.kind === 'unknown' ? status.reason : 'applied';
  if (status.kind === 'rejected' && status.code === Code.TransactionNotFound) return { ...triage.notApplied, attempt: undefined };
  if (triage.onDoubt !== undefined && (status.kind !== 'ok' || triage.target === 'debit')) {
    return { ...triage.onDoubt, attempt: undefined, note: `${triage.onDoubt.note ?? ''} (status: ${said})` };
  }
  if (status.kind !== 'ok') return inconclusive();
  if (triage.target === 'debit') {
    return { ...base, state: 'dead', note: 'the wallet reports the debit applied, but its rollback keeps answering 34/39', debitState: 'dead' };
  }
  const balance = status.response.balance;
  return {
    ...base,
    state: 'succeeded',
    // However the success was learned, a succeeded record says 1 (contract 5.3).
    lastWalletCode: Code.Success,
    balance,
    sessionBalance: balance,
    error: null,
    note: 'applied at the wallet (status after an unknown outcome)',
    ...(rollbackOf ? { debitState: 'compensated' as const } : {}),
  };
}
