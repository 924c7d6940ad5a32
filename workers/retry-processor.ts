import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import { replaceFailedRollback } from '../src/duties/compensation';
import type { RetryJobData } from '../src/duties/queues';
import { lastOutageFailureAt } from '../src/duties/breaker-policy';
import { decideRetry, retryPlan, type DelayUnit } from '../src/duties/retry-policy';
import { afterRetryAttempt, afterTriage, firstTryIsInline, isRefusedForGood, type RetryNext, type Triage } from '../src/duties/settlement';
import { statusFieldsFor } from '../src/duties/status-check';
import type { InFlightCap } from '../src/duties/in-flight-cap';
import type { WalletBreaker } from '../src/duties/wallet-breaker';
import type { Durability } from '../src/store/durability';
import { unredactedSibling, type Logger } from '../src/observability/logger';
import type { Metrics } from '../src/observability/metrics';
import type { SettleUpdate, ShardRef, TransactionStore } from '../src/store/transactions';
import type { TransactionRecord, TransactionState } from '../src/store/types';
import { walletHttpStatus } from '../src/wallet/codes';
import type { WalletClient, WalletOutcome } from '../src/wallet/protocol';
import { RetryLater } from './backoff';

export interface RetryProcessorDeps {
  readonly store: TransactionStore;
  /** Makes sure a retry job drives the record (a compensation started here). */
  readonly ensureRetryJob: (record: ShardRef) => Promise<unknown>;
  /** The shard whose retry queue this processor runs: its jobs' records are in that shard. */
  readonly shard: number;
  readonly wallet: WalletClient;
  /** While the wallet circuit breaker is not closed, no attempt is made and none of the budget is spent. */
  readonly breaker: Pick<WalletBreaker, 'gate' | 'trialDone' | 'trialUnused' | 'refused' | 'allowsCalls' | 'healthOkAt'>;
  /** Holds the whole retry queue back for this long (BullMQ queue.rateLimit). */
  readonly rateLimit: (ms: number) => Promise<void>;
  /** This process's share of the wallet's max_in_flight: a run over it waits, no attempt begun. */
  readonly cap: Pick<InFlightCap, 'tryTake' | 'give'>;
  /** REDIS_MIN_REPLICAS: a send waits until a replica has the attempt's start (contract 9). */
  readonly durability: Pick<Durability, 'confirmStore'>;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly unit: DelayUnit;
  /** Added to every planned run time for the sweeper: a job that is merely late is not re-driven. */
  readonly graceMs: number;
  /** How often a held round closer looks again whether its round's earlier work settled. */
  readonly heldRecheckMs: number;
  /**
   * How long an attempt may be in flight in one run (its wallet call and its settle); another run
   * of the same job meanwhile waits instead of sending. The job lock's lifetime: past it, BullMQ
   * itself takes the run for dead.
   */
  readonly inFlightMs: number;
  /** How long after its claim a gateway's inline first try may still be out (inlineCallWindowMs). */
  readonly inlineWindowMs: number;
  /** A debit its compensation found never applied is asked about again this often, this long (contract 5.4). */
  readonly recheckIntervalMs: number;
  readonly recheckWindowMs: number;
  readonly now: () => number;
}

/** How long a status question waits for the wallet circuit breaker before it looks again. */
const WAIT_FOR_BREAKER_MS = 1_000;
/** A run over the wallet's max_in_flight looks again this soon. */
const WAIT_FOR_CAP_MS = 100;

/**
 * One run of a retry job: one wallet attempt of a pending credit, rollback or compensation, read by
 * the shared settlement, then the store update and the next step (complete, BullMQ backoff, or end
 * at once through UnrecoverableError).
 */
export function createRetryProcessor(deps: RetryProcessorDeps) {
  const { store, ensureRetryJob, shard, wallet, breaker, rateLimit, cap, durability, logger, metrics, unit, graceMs, heldRecheckMs, inFlightMs, inlineWindowMs, recheckIntervalMs, recheckWindowMs, now } = deps;

  const plan = retryPlan(unit);
  // A retry's own lines name ids, codes and states picked one by one (never a body or token): no
  // redaction pass, and no child logger per run (both showed in the worker's profile).
  const runLog = unredactedSibling(logger);

  return async function processRetry(job: Job<RetryJobData>, token?: string): Promise<string> {
    // Over the wallet's max_in_flight (contract 11): the job waits; nothing is read or begun, so
    // the record's attempts stay as they are.
    if (!cap.tryTake('retry')) {
      if (token === undefined) throw new RetryLater(WAIT_FOR_CAP_MS, 'wallet max_in_flight reached');
      await job.moveToDelayed(now() + WAIT_FOR_CAP_MS, token);
      throw new DelayedError();
    }
    try {
      return await run(job, token);
    } finally {
      cap.give();
    }
  };

  async function run(job: Job<RetryJobData>, token: string | undefined): Promise<string> {
    const { transactionId } = job.data;
    // The common run (a plain retry that is due, the breaker closed: gate() would say go) reads
    // the record and starts its attempt in one step; any other run only reads it here.
    const begun = await store.beginRetry(transactionId, shard, {
      now: now(),
      mayStart: breaker.allowsCalls(),
      inFlightUntil: now() + inFlightMs,
      nextCheckAt: now() + graceMs,
      plan,
      healthOkAt: breaker.healthOkAt(),
    });
    if (begun === undefined) {
      logger.warn({ transaction_id: transactionId }, 'retry job for an unknown transaction; nothing to do');
      return 'missing';
    }
    const { record } = begun;
    if (begun.kind === 'started' && isRetryable(record)) return attempt(record, token);
    if (record.state !== 'pending') {
      await reconcileCompensatedDebit(record);
      return record.state;
    }
    if (!isRetryable(record)) {
      // A debit is never re-sent: the sweeper asks the wallet about a lost one.
      logger.error({ transaction_id: transactionId }, 'retry job for a pending debit; left to the sweeper');
      return 'debit';
    }

    if (record.deferred && record.attempts === 0 && (await store.openInRound(record)) > 0) {
      // A held round closer waits for the round's earlier credits/rollbacks; waiting is no attempt.
      if (token === undefined) throw new RetryLater(heldRecheckMs, 'round has pending work');
      await job.moveToDelayed(now() + heldRecheckMs, token);
      throw new DelayedError();
    }

    // An engine call whose inline first try is not recorded yet may still be at the wallet: an
    // engine refund linked as a debit's compensation gets its job at once. Not sent a second time
    // alongside it; past that call's deadline the run goes on (the same id, which the wallet
    // dedupes, if the inline call never settled).
    if (record.attempts === 0 && firstTryIsInline(record) && record.createdAt + inlineWindowMs > now()) {
      const inlineUntil = record.createdAt + inlineWindowMs;
      if (token === undefined) throw new RetryLater(inlineUntil - now(), 'inline call may be out');
      await job.moveToDelayed(inlineUntil, token);
      throw new DelayedError();
    }

    if (record.inFlightUntil !== null && record.inFlightUntil > now()) {
      // Another run of this job (a stalled one picked up again) is sending an attempt right now.
      if (token === undefined) throw new RetryLater(record.inFlightUntil - now(), 'attempt in flight');
      await job.moveToDelayed(record.inFlightUntil, token);
      throw new DelayedError();
    }

    if (record.history.length > 0) {
      const decision = decideRetry(record.history, unit);
      if (!decision.retry) {
        // The last attempt was recorded but its run ended before the record was settled (a crash
        // mid-call leaves the placeholder 'unknown'): finish it from what the record holds.
        const outcome = recordedOutcome(record.history.at(-1)!);
        const next = afterRetryAttempt({ record, priorHistory: record.history.slice(0, -1), attempts: record.attempts, outcome, unit, now: now(), ...(await betOfRefund(record, outcome)) });
        return apply(record, next, token);
      }
      // Only a stalled job picked up again can come early; the spec's delay still holds.
      const dueAt = record.updatedAt + decision.delayMs;
      if (dueAt > now()) {
        if (token === undefined) throw new RetryLater(dueAt - now(), 'too early');
        await job.moveToDelayed(dueAt, token);
        throw new DelayedError();
      }
    }

    // The wallet is down: back to wait, the queue held until the breaker's probe; no attempt is made
    // and none of the spec's budget is spent. The last try failed as an outage would: this one
    // record waits for the breaker's verdict.
    const gate = await breaker.gate('retry', lastOutageFailureAt(record));
    if (gate.kind === 'wait') {
      breaker.refused('retry');
      if (token === undefined) throw new RetryLater(gate.ms, 'wallet circuit breaker open');
      if (gate.for === 'verdict') {
        await job.moveToDelayed(now() + gate.ms, token);
        throw new DelayedError();
      }
      await rateLimit(gate.ms);
      throw Worker.RateLimitError();
    }
    if (gate.kind === 'trial') return trial(job, record, token);

    // An engine call's inline try still unrecorded past its window was lost with its gateway and may
    // have reached the wallet: it counts as one unknown try (contract 5.3), as the sweeper counts it.
    const counted: typeof record = record.attempts === 0 && firstTryIsInline(record) ? { ...record, attempts: 1, history: ['unknown'] } : record;
    // Count the try before it goes out: a crash mid-call still uses up one attempt.
    const started = await store.settle(record, {
      state: 'pending',
      expect: ['pending'],
      // One run starts this attempt: a concurrent run that read the same record loses here.
      expectAttempts: record.attempts,
      attempts: counted.attempts + 1,
      history: [...counted.history, 'unknown'],
      inFlightUntil: now() + inFlightMs,
      nextCheckAt: now() + graceMs,
    });
    if (!started) return 'settled-elsewhere';
    return attempt(counted, token);
  }

  /**
   * A half-open breaker's trial: wallet `status` of the record's transaction, a query and not a
   * send of it, so a failed trial spends none of its budget. The send itself waits until the
   * breaker closes.
   */
  async function trial(job: Job<RetryJobData>, record: TransactionRecord, token: string | undefined): Promise<never> {
    const fields = statusFieldsFor(record);
    if (fields === undefined) {
      await breaker.trialUnused();
    } else {
      const status = await wallet.call('status', fields);
      await breaker.trialDone(record.transactionId, { outcome: status.kind, code: status.kind === 'rejected' ? status.code : null });
    }
    if (token === undefined) throw new RetryLater(WAIT_FOR_BREAKER_MS, 'trial made');
    await job.moveToDelayed(now() + WAIT_FOR_BREAKER_MS, token);
    throw new DelayedError();
  }

  /** The wallet attempt of a run whose start is recorded (`record` as it was before that start). */
  async function attempt(record: TransactionRecord & { kind: 'credit' | 'rollback' }, token: string | undefined): Promise<string> {
    const attempts = record.attempts + 1;
    const priorHistory = record.history;
    // Write-ahead, as the gateway's inline try: the wallet sees the try only once a replica has its
    // start and every write before it. A failed primary that comes back as a primary for a moment
    // takes writes its resync then drops; a rollback sent on a compensation begun there would
    // reverse a debit no record says was reversed. Not sent: the counted try stands as one that
    // may have gone out, as after a crash mid-call.
    if (!(await durability.confirmStore(shard))) {
      runLog.warn({ ...runFields(record), attempts }, 'attempt not sent: its start is not on a replica');
      throw new RetryLater(inFlightMs, 'the attempt\'s start is not on a replica');
    }
    const outcome = await wallet.send(record.walletOperation, record.walletBody, { attempt: attempts });
    const next = afterRetryAttempt({ record, priorHistory, attempts, outcome, unit, now: now(), ...(await betOfRefund(record, outcome)) });
    return apply(record, next, token);
  }

  /**
   * An engine refund whose try failed: was its bet refused for good meanwhile (nothing to reverse)?
   * Does it stand in for the bet's compensation (the bet `compensating`, naming it)?
   */
  async function betOfRefund(record: TransactionRecord, outcome: WalletOutcome): Promise<{ betRefused: boolean; standsIn: boolean }> {
    if (outcome.kind === 'ok' || record.kind !== 'rollback' || record.isCompensation || record.referenceTransactionId === null) return { betRefused: false, standsIn: false };
    const bet = await store.get(record.referenceTransactionId, shard);
    return { betRefused: isRefusedForGood(bet), standsIn: bet?.kind === 'debit' && bet.state === 'compensating' && bet.compensationId === record.transactionId };
  }

  /**
   * Every settle of a run names the attempt count the run made: a run that stalled past its lock
   * (its job picked up again, the next attempt started) cannot overwrite the newer run's record.
   */
  async function apply(record: TransactionRecord, next: RetryNext, token: string | undefined): Promise<string> {
    const about = runFields(record);
    switch (next.kind) {
      case 'retry': {
        // Object.assign, not `{ ...u, key }`: node 20's V8 adds each key after a spread through a runtime call.
        const update = Object.assign({}, next.update, { inFlightUntil: null, nextCheckAt: now() + next.delayMs + graceMs, expectAttempts: next.update.attempts });
        if (!(await store.settle(record, update))) return 'settled-elsewhere';
        const code = String(update.history?.at(-1) ?? 'unknown');
        metrics.retries.inc({ kind: record.kind, code });
        runLog.info({ ...about, attempts: update.attempts, code, delay_ms: next.delayMs }, 'wallet attempt to be retried');
        throw new RetryLater(next.delayMs, `retry after code ${code}`);
      }
      case 'settle':
        return finish(record, next.update, about);
      case 'triage':
        return triage(record, next, about, token);
    }
  }

  /** The answers left open whether the wallet applied something: wallet `status` decides (a query, not a retry). */
  async function triage(record: TransactionRecord, next: Triage, about: RunFields, token: string | undefined): Promise<string> {
    if (!breaker.allowsCalls()) {
      // No status question while the wallet is down (an unclear answer would make it dead): keep
      // the last answer and wait; the next run comes back here.
      if (!(await store.settle(record, { state: 'pending', expect: ['pending'], ...next.progress, expectAttempts: next.progress.attempts, inFlightUntil: null }))) return 'settled-elsewhere';
      breaker.refused('status');
      if (token === undefined) throw new RetryLater(WAIT_FOR_BREAKER_MS, 'wallet circuit breaker open');
      await rateLimit(WAIT_FOR_BREAKER_MS);
      throw Worker.RateLimitError();
    }
    // Store the last answer first, so a crash during the query resumes at the triage.
    const kept = await store.settle(record, { state: 'pending', expect: ['pending'], ...next.progress, expectAttempts: next.progress.attempts, inFlightUntil: now() + inFlightMs, nextCheckAt: now() + graceMs });
    if (!kept) return 'settled-elsewhere';
    const subject = next.target === 'self' ? record : record.referenceTransactionId === null ? undefined : await store.get(record.referenceTransactionId, shard);
    // The subject is pending (self) or a compensating debit: both keep their wallet body.
    const fields = subject === undefined ? undefined : statusFieldsFor(subject);
    const status: WalletOutcome =
      fields === undefined
        ? { kind: 'unknown', reason: 'schema', detail: 'the debit record or its wallet body is gone', latencyMs: 0 }
        : await wallet.call('status', fields);
    runLog.info({ ...about, target: next.target, subject: subject?.transactionId, status: status.kind === 'rejected' ? status.code : status.kind }, 'wallet status asked');
    return finish(record, afterTriage(next, status), about);
  }

  async function finish(record: TransactionRecord, final: SettleUpdate, about: RunFields): Promise<string> {
    // A compensation (or the engine refund standing in for it) that found its debit never applied:
    // the debit is watched, since a wallet may still process it late (contract 5.4).
    const neverApplied = final.debitState === 'compensated' && (record.isCompensation ? final.state !== 'succeeded' : final.onlyIfStandsIn === true);
    const update: SettleUpdate = neverApplied ? { ...final, watchDebit: { until: now() + recheckWindowMs, firstCheckAt: now() + recheckIntervalMs } } : final;
    if (!(await store.settle(record, Object.assign({}, update, { inFlightUntil: null, expectAttempts: update.attempts })))) return 'settled-elsewhere';
    const fields = Object.assign({}, about, { attempts: update.attempts, last_wallet_code: update.lastWalletCode, state: update.state, note: update.note });
    if (record.isCompensation) metrics.compensations.inc({ result: compensationResult(update.state) });
    switch (update.state) {
      case 'succeeded':
        runLog.info(fields, 'wallet call settled');
        return 'succeeded';
      case 'dead':
        metrics.deadTransactions.inc({ kind: record.kind });
        runLog.error(fields, 'transaction dead: an operator must act');
        throw new UnrecoverableError(`dead: ${update.note ?? 'retries exhausted'}`);
      default:
        // A compensation found unnecessary (the debit never applied) is a good end, not a failed job.
        if (update.debitState === 'compensated') {
          runLog.info(fields, 'compensation not needed');
          return update.state;
        }
        runLog.warn(fields, 'wallet call ended without success');
        throw new UnrecoverableError(`${update.state}: ${update.error?.message ?? update.note ?? 'refused'}`);
    }
  }

  /**
   * An engine refund linked as a debit's compensation may have settled before the link was made;
   * its settle then did not move the debit. Finish the debit from the refund's final state. A refund
   * the wallet refused for good (its inline answer, the engine's 4xx) reversed nothing: the debit's
   * own compensation takes over, as if no refund had stood in.
   */
  async function reconcileCompensatedDebit(record: TransactionRecord): Promise<void> {
    if (record.kind !== 'rollback' || record.referenceTransactionId === null) return;
    if (record.state === 'failed') {
      // (It reads the debit itself, and acts only while the debit still names this refund.)
      const compensationId = await replaceFailedRollback({ store, enqueue: ensureRetryJob, now, leaseMs: graceMs }, record);
      if (compensationId !== undefined) logger.warn({ transaction_id: record.referenceTransactionId, refused_refund_id: record.transactionId, compensation_id: compensationId }, 'refund standing in for a compensation was refused: own compensation started');
      return;
    }
    if (record.state !== 'succeeded' && record.state !== 'dead') return;
    const debit = await store.get(record.referenceTransactionId, shard);
    if (debit?.state !== 'compensating' || debit.compensationId !== record.transactionId) return;
    const debitState: TransactionState = record.state === 'succeeded' ? 'compensated' : 'dead';
    await store.settle(record, { state: record.state, expect: [record.state], debitState });
    logger.info({ transaction_id: record.transactionId, debit_id: debit.transactionId, debit_state: debitState }, 'debit settled from its compensation');
  }
}

/** What every line of one run names. */
interface RunFields {
  readonly transaction_id: string;
  readonly kind: TransactionRecord['kind'];
  readonly compensation: boolean;
}

function runFields(record: TransactionRecord): RunFields {
  return { transaction_id: record.transactionId, kind: record.kind, compensation: record.isCompensation };
}

/** Retry jobs carry credits and rollbacks; a pending debit is the sweeper's. */
function isRetryable(record: TransactionRecord): record is TransactionRecord & { kind: 'credit' | 'rollback' } {
  return record.kind !== 'debit';
}

function compensationResult(state: TransactionState): string {
  if (state === 'succeeded') return 'succeeded';
  if (state === 'dead') return 'dead';
  return 'not_applied';
}

/** The outcome a recorded history entry stands for, when the run that made it ended early. */
function recordedOutcome(result: number | 'unknown'): WalletOutcome {
  if (result === 'unknown') return { kind: 'unknown', reason: 'connection', detail: 'the worker stopped during the call', latencyMs: 0 };
  return { kind: 'rejected', code: result, httpStatus: walletHttpStatus(result), message: 'recorded before the worker stopped', walletRequestId: undefined, latencyMs: 0 };
}
