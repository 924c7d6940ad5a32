import type { TransactionStore } from '../store/transactions';
import type { TransactionKind, TransactionRecord, TransactionState } from '../store/types';
import { ensureRetryJob, type Queues } from './queues';

export type RedriveResult =
  | { readonly kind: 'redriven'; readonly transactionId: string }
  | { readonly kind: 'not_found' }
  | { readonly kind: 'not_dead'; readonly transactionId: string; readonly state: TransactionState };

export interface RedriveDeps {
  readonly store: TransactionStore;
  readonly queues: Queues;
  readonly now?: () => number;
}

/**
 * The record an operator's action on `transactionId` moves: the record itself, or, for a dead debit,
 * its compensation rollback (a debit is never listed as dead on its own: its compensation is what
 * is driven or resolved). undefined: no such record.
 */
export async function operatorTarget(store: Pick<TransactionStore, 'get' | 'shardOf'>, transactionId: string): Promise<TransactionRecord | undefined> {
  const record = await store.get(transactionId);
  if (record === undefined) return undefined;
  return record.kind === 'debit' && record.state === 'dead' && record.compensationId !== null ? store.get(record.compensationId, store.shardOf(record)) : record;
}

/**
 * An operator's redrive (POST /admin/transactions/{id}/redrive): a dead record goes back to pending
 * with a fresh retry budget (history emptied; attempts keep counting every wallet try) and its job
 * is queued again. For a debit whose compensation died, the compensation is what is redriven.
 */
export async function redrive(deps: RedriveDeps, transactionId: string): Promise<RedriveResult> {
  const now = deps.now ?? Date.now;
  const target = await operatorTarget(deps.store, transactionId);
  if (target === undefined) return { kind: 'not_found' };
  if (target.state !== 'dead') return { kind: 'not_dead', transactionId: target.transactionId, state: target.state };

  const moved = await deps.store.settle(target, {
    state: 'pending',
    expect: ['dead'],
    history: [],
    error: null,
    note: null,
    nextCheckAt: now(),
    // The debit a compensation stands for is compensating again (the store applies it only then).
    ...(target.kind === 'rollback' ? { debitState: 'compensating' as const } : {}),
  });
  if (!moved) {
    const current = await deps.store.get(target.transactionId, deps.store.shardOf(target));
    return { kind: 'not_dead', transactionId: target.transactionId, state: current?.state ?? target.state };
  }
  await ensureRetryJob(deps.queues, target, 0);
  return { kind: 'redriven', transactionId: target.transactionId };
}

/** Which dead records a bulk redrive takes: by kind and by when they died. */
export interface RedriveFilter {
  readonly kind?: TransactionKind;
  /** Died at or after (ms since the epoch). */
  readonly from?: number;
  /** Died at or before. */
  readonly to?: number;
  /** At most this many per call; the rest stay listed for the next. */
  readonly limit: number;
}

export interface RedriveManyResult {
  readonly redriven: readonly string[];
  readonly skipped: readonly { readonly transactionId: string; readonly reason: string }[];
}

/**
 * `POST /admin/transactions/redrive`: every dead record the filter matches is redriven, one by one,
 * each exactly as a single redrive (after a wallet outage, all that still went dead at once).
 * `redriveOne`: how one is redriven (the operators' wiring adds its audit entry).
 */
export async function redriveMany(
  deps: RedriveDeps,
  filter: RedriveFilter,
  redriveOne: (transactionId: string) => Promise<RedriveResult> = (id) => redrive(deps, id),
): Promise<RedriveManyResult> {
  const redriven: string[] = [];
  const skipped: { transactionId: string; reason: string }[] = [];
  for (const { transactionId: id, shard } of await deps.store.deadBetween(filter.from ?? 0, filter.to ?? Number.MAX_SAFE_INTEGER, filter.limit)) {
    const record = await deps.store.get(id, shard);
    if (record === undefined || (filter.kind !== undefined && record.kind !== filter.kind)) continue;
    const result = await redriveOne(id);
    if (result.kind === 'redriven') redriven.push(result.transactionId);
    else skipped.push({ transactionId: id, reason: result.kind === 'not_dead' ? `now ${result.state}` : 'gone' });
  }
  return { redriven, skipped };
}

