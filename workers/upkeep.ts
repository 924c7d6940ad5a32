import { compensationFor, compensationRef, replaceFailedRollback } from '../src/duties/compensation';
import { nextCompensationId } from '../src/duties/compensation-id';
import { ensureRetryJob, ensureTerminateJob, hasLiveRetryJob, retryJobTrace, type Queues } from '../src/duties/queues';
import { ATTR, contextOf, inSpan } from '../src/lib/tracing';
import { firstTryIsInline } from '../src/duties/settlement';
import { deadCheckUpdate, statusFieldsFor } from '../src/duties/status-check';
import { codedError } from '../src/lib/error-codes';
import type { WalletBreaker } from '../src/duties/wallet-breaker';
import type { Logger } from '../src/observability/logger';
import type { Metrics } from '../src/observability/metrics';
import { walletSessionFields, type SessionStore } from '../src/store/sessions';
import type { TransactionStore } from '../src/store/transactions';
import type { TransactionError, TransactionRecord } from '../src/store/types';
import { Code } from '../src/wallet/codes';
import type { StatusFields, WalletClient } from '../src/wallet/protocol';

export interface UpkeepDeps {
  readonly store: TransactionStore;
  readonly sessions: SessionStore;
  readonly queues: Queues;
  readonly wallet: WalletClient;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** How long a record re-driven or found with a live job is left alone before the next look. */
  readonly graceMs: number;
  readonly deadCheckWindowMs: number;
  readonly deadCheckIntervalMs: number;
  readonly providerId: string;
  /** While the wallet circuit breaker is not closed the upkeep asks the wallet nothing. */
  readonly breaker: Pick<WalletBreaker, 'allowsCalls'>;
  readonly now: () => number;
}

/**
 * The fields of a `status` question about a record: its stored wallet body, or, once that was
 * dropped (a settle Redis later lost), its token's fields with its own id, amount and round.
 */
async function statusFieldsOf(deps: UpkeepDeps, record: TransactionRecord): Promise<StatusFields | undefined> {
  if (record.walletBody !== '') return statusFieldsFor(record);
  const token = await deps.sessions.tokenFields(record.tokenRef);
  return token === undefined ? undefined : statusFieldsFor(record, walletSessionFields(token, deps.providerId));
}

/** Records looked at per sweep; the rest wait for the next sweep (every SWEEP_INTERVAL_MS). */
export const SWEEP_BATCH = 1000;
/** Dead records looked at per dead-check run. */
export const DEAD_CHECK_BATCH = 1000;

/** What the engine was told about a debit whose inline call never came back (its process stopped). */
const LOST_DEBIT_ERROR: TransactionError = codedError('WALLET_UNAVAILABLE', { message: 'wallet outcome unknown (the gateway stopped during the call)' });

export interface SweepReport {
  examined: number;
  jobsAdded: number;
  compensations: number;
  /** Debits in doubt the wallet reported applied (`status`): succeeded, never rolled back. */
  debitsApplied: number;
  /** Ending tokens that had no terminate job behind them. */
  terminatesDriven: number;
}

/**
 * The sweeper: every pending record whose check time passed and that has no live job behind it is
 * driven again, and so is every ending token with no terminate job. A pending debit past its lease
 * lost its inline call (its gateway died mid-call, or Redis lost the write of its outcome): the
 * wallet is asked with `status` first (contract 5.5); applied → succeeded, not applied →
 * compensated, no clear answer → asked again at the next sweep. A pending credit or rollback gets
 * its retry job back. `signal`: stop between records (a closing worker does not wait for a batch).
 */
export async function sweep(deps: UpkeepDeps, signal?: AbortSignal): Promise<SweepReport> {
  const { store, sessions, queues, logger, now } = deps;
  const report: SweepReport = { examined: 0, jobsAdded: 0, compensations: 0, debitsApplied: 0, terminatesDriven: 0 };
  // Shard by shard: each has its own pending and ending index (one slot each).
  for (const shard of store.layout.all) {
    for (const id of await store.dueForSweep(shard, now(), SWEEP_BATCH)) {
      if (signal?.aborted) break;
      report.examined += 1;
      try {
        const record = await store.get(id, shard);
        if (record?.kind === 'debit' && record.state === 'compensating') {
          if (await handOverRefusedStandIn(deps, record, shard)) report.compensations += 1;
          continue;
        }
        if (record?.state !== 'pending') continue;
        if (record.kind === 'debit') {
          const resolved = await resolveDebitInDoubt(deps, record);
          if (resolved === 'compensated') report.compensations += 1;
          if (resolved === 'applied') report.debitsApplied += 1;
        } else if (await redrivePending(deps, record)) {
          report.jobsAdded += 1;
        }
      } catch (err) {
        logger.error({ err, transaction_id: id }, 'sweep of a pending record failed; next sweep tries again');
      }
    }
    for (const tokenRef of await sessions.dueEndingTokens(shard, now(), SWEEP_BATCH)) {
      if (signal?.aborted) break;
      try {
        if (await ensureTerminateJob(queues, tokenRef)) report.terminatesDriven += 1;
      } catch (err) {
        logger.error({ err, token_ref: tokenRef }, 'sweep of an ending token failed; next sweep tries again');
      }
    }
  }
  if (report.jobsAdded + report.compensations + report.debitsApplied + report.terminatesDriven > 0) logger.warn(report, 'sweep re-drove pending work');
  return report;
}

/** A debit in doubt: wallet `status` first, then succeeded, compensated, or asked again later. */
async function resolveDebitInDoubt(deps: UpkeepDeps, debit: TransactionRecord): Promise<'applied' | 'compensated' | 'unclear' | 'moved'> {
  const { store, wallet, logger, now } = deps;
  // A gateway that recorded its try keeps that count; otherwise the lost call counts as one unknown try.
  const tried = debit.attempts > 0;
  const attempts = tried ? debit.attempts : 1;
  const history = tried ? debit.history : (['unknown'] as const);
  const fields = deps.breaker.allowsCalls() ? await statusFieldsOf(deps, debit) : undefined;
  const status = fields === undefined ? undefined : await wallet.call('status', fields);
  if (status?.kind === 'ok') {
    const balance = status.response.balance;
    const applied = await store.settle(debit, {
      state: 'succeeded',
      expect: ['pending'],
      attempts,
      history,
      lastWalletCode: Code.Success,
      balance,
      sessionBalance: balance,
      error: null,
      note: 'applied at the wallet (status of a debit in doubt)',
    });
    if (applied) logger.warn({ transaction_id: debit.transactionId }, 'debit in doubt found applied at the wallet: succeeded');
    return applied ? 'applied' : 'moved';
  }
  if (status?.kind !== 'rejected' || status.code !== Code.TransactionNotFound) {
    await store.settle(debit, { state: 'pending', expect: ['pending'], nextCheckAt: now() + deps.graceMs });
    logger.warn({ transaction_id: debit.transactionId, status: status === undefined ? 'no body' : status.kind === 'rejected' ? status.code : status.kind }, 'debit in doubt: status unclear; asked again later');
    return 'unclear';
  }
  return (await compensateLostDebit(deps, debit, attempts, history)) ? 'compensated' : 'moved';
}

/**
 * A debit the settle of its refused stand-in put back in the pending index: the process that
 * should have handed its compensation over right after that settle did not (it died), nor did a
 * job of the refund. The debit's own compensation takes over now.
 */
async function handOverRefusedStandIn(deps: UpkeepDeps, debit: TransactionRecord, shard: number): Promise<boolean> {
  const refund = debit.compensationId === null ? undefined : await deps.store.get(debit.compensationId, shard);
  if (refund?.state !== 'failed') {
    // Not a refused stand-in (any more): nothing to hand over now. Looked at again only after the
    // grace, so such an entry does not take a place in every sweep's batch; not removed, since a
    // refusal settled meanwhile may just have put it there (that look then comes a grace later).
    await deps.store.sweepLater(debit, deps.now() + deps.graceMs);
    return false;
  }
  const compensationId = await replaceFailedRollback({ store: deps.store, enqueue: (ref) => ensureRetryJob(deps.queues, ref, 0), now: deps.now, leaseMs: deps.graceMs }, refund, debit);
  if (compensationId !== undefined) deps.logger.warn({ transaction_id: debit.transactionId, refused_refund_id: refund.transactionId, compensation_id: compensationId }, 'refund standing in for a compensation was refused, its hand-over lost: own compensation started');
  return compensationId !== undefined;
}

async function compensateLostDebit(deps: UpkeepDeps, debit: TransactionRecord, attempts: number, history: TransactionRecord['history']): Promise<boolean> {
  const { store, queues, logger, metrics, now } = deps;
  const result = await store.beginCompensation({
    debit,
    error: LOST_DEBIT_ERROR,
    attempts,
    lastWalletCode: debit.lastWalletCode,
    history,
    compensation: compensationFor(debit, now()),
    leaseUntil: now() + deps.graceMs,
  });
  if (result.kind === 'not_pending') return false;
  await ensureRetryJob(queues, compensationRef(debit, result.compensationId), 0);
  metrics.compensations.inc({ result: 'scheduled' });
  logger.warn({ transaction_id: debit.transactionId, compensation_id: result.compensationId, link: result.kind }, 'lost debit: compensation started');
  return true;
}

async function redrivePending(deps: UpkeepDeps, record: TransactionRecord): Promise<boolean> {
  const { store, queues, logger, now } = deps;
  const added = (await hasLiveRetryJob(queues, record)) ? false : await ensureRetryJob(queues, record, 0);
  // Not due again before the job had its chance to run. A claimed record whose inline call never
  // settled (its gateway died, or Redis lost the write) may have reached the wallet: that try
  // counts (contract 5.3). None was made for a held round closer, a call queued unsent (the wallet
  // was down, or the claim not durable) or a compensation (only workers send those, counted first).
  const lostInline = record.attempts === 0 && firstTryIsInline(record);
  await store.settle(record, {
    state: 'pending',
    expect: ['pending'],
    nextCheckAt: now() + deps.graceMs,
    ...(lostInline ? { expectAttempts: 0, attempts: 1, history: ['unknown'] as const } : {}),
  });
  if (added) logger.warn({ transaction_id: record.transactionId, kind: record.kind }, 'pending record had no job: re-queued');
  return added;
}

/** Where a process's next dead-check run reads on from: a time of death (0: the window's start). */
export interface DeadCheckCursor {
  from: number;
}

/**
 * The slow check of dead credits and rollbacks: while a record is younger than the window, wallet
 * `status` is asked whether it was applied after all; if so it becomes succeeded and leaves the
 * operators' list. Returns how many were settled.
 */
export async function deadCheck(deps: UpkeepDeps, cursor: DeadCheckCursor = { from: 0 }): Promise<number> {
  const { store, wallet, logger, now } = deps;
  // Read the ids first: settling removes entries and would shift the pages. Only those that died
  // within the window (older ones stay dead until an operator acts), oldest first from the cursor:
  // after a full batch the next run goes on after it, so a burst of deaths the wallet never applied
  // cannot hold every place in the batch for its whole window; after a short one it starts over.
  if (!deps.breaker.allowsCalls()) return 0;
  const ids = await store.deadBetween(Math.max(now() - deps.deadCheckWindowMs, cursor.from), now(), DEAD_CHECK_BATCH);
  let lastDeath = 0;
  let settled = 0;
  for (const { transactionId: id, shard } of ids) {
    try {
      const record = await store.get(id, shard);
      if (record?.state !== 'dead') continue;
      // A dead record's last update is its death: its score in the dead index.
      lastDeath = Math.max(lastDeath, record.updatedAt);
      if (record.kind === 'debit') continue;
      if (now() - record.updatedAt > deps.deadCheckWindowMs) continue;
      // A dead record keeps its wallet body; without one there is nothing to ask with.
      const fields = statusFieldsFor(record);
      if (fields === undefined) continue;
      // The question continues the trace of the request behind the record (its failed job keeps it).
      const trace = await retryJobTrace(deps.queues, record);
      const status = await inSpan('dead-check', { parent: contextOf(trace), attributes: { [ATTR.transactionId]: id } }, () => wallet.call('status', fields));
      const update = deadCheckUpdate(record, status);
      if (update !== undefined && (await store.settle(record, update))) {
        settled += 1;
        logger.warn({ transaction_id: id, kind: record.kind }, 'dead record found applied at the wallet: succeeded');
      }
    } catch (err) {
      logger.error({ err, transaction_id: id }, 'dead-check of a record failed');
    }
  }
  cursor.from = ids.length === DEAD_CHECK_BATCH ? lastDeath : 0;
  return settled + (await recheckNeverApplied(deps));
}

/**
 * Debits whose compensation found them never applied are asked about again (contract 5.4): one
 * that shows up applied (a wallet processed it after the gateway gave up) gets a second
 * compensation, with an id of its own derived from the debit's; one still not applied when the
 * window ends stays `compensated`, and the watch ends. Returns how many were rolled back.
 */
async function recheckNeverApplied(deps: UpkeepDeps): Promise<number> {
  let rolledBack = 0;
  for (const shard of deps.store.layout.all) {
    for (const id of await deps.store.dueForRecheck(shard, deps.now(), DEAD_CHECK_BATCH)) {
      if (await recheckWatchedDebit(deps, id, shard)) rolledBack += 1;
    }
  }
  return rolledBack;
}

/**
 * One `status` question about a watched debit, every DEAD_CHECK_INTERVAL_MS: applied → its second
 * compensation starts (true); the watch ends when the window is over. The watch holds its token's
 * terminate (the wallet can roll a late debit back only while the token lives).
 */
async function recheckWatchedDebit(deps: UpkeepDeps, id: string, shard: number): Promise<boolean> {
  const { store, queues, wallet, logger, metrics, now } = deps;
  try {
    const debit = await store.get(id, shard);
    if (debit?.state !== 'compensated' || debit.recheckUntil === null) return false;
    const fields = await statusFieldsOf(deps, debit);
    const status = fields === undefined ? undefined : await wallet.call('status', fields);
    const nextId = nextCompensationId(debit.transactionId, debit.compensationId);
    if (status?.kind === 'ok' && nextId !== undefined) {
      const started = await store.beginCompensation({
        debit,
        error: debit.error ?? LOST_DEBIT_ERROR,
        attempts: debit.attempts,
        lastWalletCode: debit.lastWalletCode,
        history: debit.history,
        compensation: compensationFor(debit, now(), nextId),
        leaseUntil: now() + deps.graceMs,
        late: true,
      });
      if (started.kind === 'not_pending') return false;
      await ensureRetryJob(queues, compensationRef(debit, started.compensationId), 0);
      metrics.compensations.inc({ result: 'scheduled' });
      logger.error({ transaction_id: id, compensation_id: started.compensationId }, 'debit applied after the gateway gave up on it: rolled back now');
      return true;
    }
    const last = status === undefined ? 'no body' : status.kind === 'rejected' ? `code ${status.code}` : status.kind;
    if (now() >= debit.recheckUntil) {
      await store.settle(debit, { state: 'compensated', expect: ['compensated'], note: `not applied at the wallet by the end of the re-check window (last status: ${last})` });
      logger.info({ transaction_id: id, status: last }, 'never-applied debit: watch over');
      return false;
    }
    await store.recheckLater(debit, Math.min(debit.recheckUntil, now() + deps.deadCheckIntervalMs));
    return false;
  } catch (err) {
    logger.error({ err, transaction_id: id }, 're-check of a never-applied debit failed');
    return false;
  }
}
