import { compensationFor } from '../src/duties/compensation';
import { ensureRetryJob, hasLiveRetryJob, type Queues } from '../src/duties/queues';
import { deadCheckUpdate, statusFieldsFor } from '../src/duties/status-check';
import { codedError } from '../src/lib/error-codes';
import type { Logger } from '../src/observability/logger';
import type { Metrics } from '../src/observability/metrics';
import type { TransactionStore } from '../src/store/transactions';
import type { TransactionError, TransactionRecord } from '../src/store/types';
import type { WalletClient } from '../src/wallet/protocol';

export interface UpkeepDeps {
  readonly store: TransactionStore;
  readonly queues: Queues;
  readonly wallet: WalletClient;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** How long a record re-driven or found with a live job is left alone before the next look. */
  readonly graceMs: number;
  readonly deadCheckWindowMs: number;
  readonly now: () => number;
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
}

/**
 * The sweeper: every pending record whose check time passed and that has no live job behind it is
 * driven again. A pending debit past its lease lost its inline call: its outcome is unknown, so it
 * is compensated. A pending credit or rollback gets its retry job back.
 */
/** `signal`: stop between records (a closing worker does not wait for a whole batch). */
export async function sweep(deps: UpkeepDeps, signal?: AbortSignal): Promise<SweepReport> {
  const { store, logger, now } = deps;
  const report: SweepReport = { examined: 0, jobsAdded: 0, compensations: 0 };
  for (const id of await store.dueForSweep(now(), SWEEP_BATCH)) {
    if (signal?.aborted) break;
    report.examined += 1;
    try {
      const record = await store.get(id);
      if (record?.state !== 'pending') continue;
      if (record.kind === 'debit') {
        if (await compensateLostDebit(deps, record)) report.compensations += 1;
      } else if (await redrivePending(deps, record)) {
        report.jobsAdded += 1;
      }
    } catch (err) {
      logger.error({ err, transactionId: id }, 'sweep of a pending record failed; next sweep tries again');
    }
  }
  if (report.jobsAdded + report.compensations > 0) logger.warn(report, 'sweep re-drove pending work');
  return report;
}

async function compensateLostDebit(deps: UpkeepDeps, debit: TransactionRecord): Promise<boolean> {
  const { store, queues, logger, metrics, now } = deps;
  // A gateway that recorded its try keeps that count; otherwise the lost call counts as one unknown try.
  const tried = debit.attempts > 0;
  const result = await store.beginCompensation({
    debit,
    error: LOST_DEBIT_ERROR,
    attempts: tried ? debit.attempts : 1,
    lastWalletCode: debit.lastWalletCode,
    history: tried ? debit.history : ['unknown'],
    compensation: compensationFor(debit, now()),
    leaseUntil: now() + deps.graceMs,
  });
  if (result.kind === 'not_pending') return false;
  await ensureRetryJob(queues, result.compensationId, 0);
  metrics.compensations.inc({ result: 'scheduled' });
  logger.warn({ transactionId: debit.transactionId, compensationId: result.compensationId, link: result.kind }, 'lost debit: compensation started');
  return true;
}

async function redrivePending(deps: UpkeepDeps, record: TransactionRecord): Promise<boolean> {
  const { store, queues, logger, now } = deps;
  const added = (await hasLiveRetryJob(queues, record.transactionId)) ? false : await ensureRetryJob(queues, record.transactionId, 0);
  // Not due again before the job had its chance to run.
  await store.settle(record, { state: 'pending', expect: ['pending'], nextCheckAt: now() + deps.graceMs });
  if (added) logger.warn({ transactionId: record.transactionId, kind: record.kind }, 'pending record had no job: re-queued');
  return added;
}

/**
 * The slow check of dead credits and rollbacks: while a record is younger than the window, wallet
 * `status` is asked whether it was applied after all; if so it becomes succeeded and leaves the
 * operators' list. Returns how many were settled.
 */
export async function deadCheck(deps: UpkeepDeps): Promise<number> {
  const { store, wallet, logger, now } = deps;
  // Read the ids first: settling removes entries and would shift the pages.
  const { ids } = await store.listDead(0, DEAD_CHECK_BATCH);
  let settled = 0;
  for (const id of ids) {
    try {
      const record = await store.get(id);
      if (record?.state !== 'dead' || record.kind === 'debit') continue;
      if (now() - record.updatedAt > deps.deadCheckWindowMs) continue;
      // A dead record keeps its wallet body; without one there is nothing to ask with.
      const fields = statusFieldsFor(record);
      if (fields === undefined) continue;
      const status = await wallet.call('status', fields);
      const update = deadCheckUpdate(record, status);
      if (update !== undefined && (await store.settle(record, update))) {
        settled += 1;
        logger.warn({ transactionId: id, kind: record.kind }, 'dead record found applied at the wallet: succeeded');
      }
    } catch (err) {
      logger.error({ err, transactionId: id }, 'dead-check of a record failed');
    }
  }
  return settled;
}
