import { codedError } from '../lib/error-codes';
import { parseJson } from '../lib/json';
import type { DebitRef, ShardRef, TransactionStore } from '../store/transactions';
import type { NewTransaction, TransactionRecord } from '../store/types';
import { debitFieldsSchema, encodeRequest } from '../wallet/protocol';
import { compensationTransactionId, nextCompensationId } from './compensation-id';

/**
 * The rollback that compensates a refused debit (the spec's rollback duty, contract 5.4): the
 * debit's id as reference, its amount and wallet round, round_closed true, and an id derived from
 * the debit's id. Built from the debit's stored wallet body, so the sweeper can build it after a crash.
 */
export function compensationFor(debit: DebitRef, now: number, transactionId = compensationTransactionId(debit.transactionId)): NewTransaction {
  const fields = debitFieldsSchema.parse(parseJson(debit.walletBody));
  const walletBody = encodeRequest('rollback', {
    ...fields,
    transaction_id: transactionId,
    reference_transaction_id: debit.transactionId,
    round_closed: true,
  });
  return {
    transactionId,
    kind: 'rollback',
    sessionId: debit.sessionId,
    tokenRef: debit.tokenRef,
    playerId: debit.playerId,
    siteId: debit.siteId,
    roundId: debit.roundId,
    walletRoundId: debit.walletRoundId,
    amount: fields.amount,
    currency: debit.currency,
    roundClosed: true,
    referenceTransactionId: debit.transactionId,
    bodyHash: `compensation:${debit.transactionId}`,
    walletOperation: 'rollback',
    walletBody,
    isCompensation: true,
    createdAt: now,
  };
}

/** What names a compensation's shard, for its retry job: its debit's player (they share a shard). */
export function compensationRef(debit: Pick<ShardRef, 'playerId' | 'siteId'>, compensationId: string): ShardRef {
  return { transactionId: compensationId, playerId: debit.playerId, siteId: debit.siteId };
}

export interface StandInDeps {
  readonly store: Pick<TransactionStore, 'get' | 'beginCompensation' | 'shardOf'>;
  /** Makes sure a retry job drives the compensation started. */
  readonly enqueue: (ref: ShardRef) => Promise<unknown>;
  readonly now: () => number;
  /** The new compensation's lease: the sweeper leaves it to its job until then. */
  readonly leaseMs: number;
}

/**
 * A rollback that stood for its debit and ended `failed` reversed nothing: an engine refund linked
 * as the debit's compensation (while its own call was still out) that the wallet refused for good,
 * or a compensation an operator resolved as not applied (contract 5.4). The debit's next own
 * compensation, with an id of its own, replaces it. Called right after the failure is settled (by
 * the gateway or the console that made it), by the refund's job, and by the sweeper when those were
 * lost; the debit holds its own token throughout, so an `end` meanwhile waits. Returns the
 * compensation's id, or undefined when the rollback stands for nothing (any more).
 */
export async function replaceFailedRollback(
  deps: StandInDeps,
  rollback: ShardRef & { readonly referenceTransactionId: string | null },
  /** The debit, when the caller read it already (the sweeper); read here otherwise. */
  readDebit?: TransactionRecord,
): Promise<string | undefined> {
  if (rollback.referenceTransactionId === null) return undefined;
  const debit = readDebit ?? (await deps.store.get(rollback.referenceTransactionId, deps.store.shardOf(rollback)));
  if (debit?.kind !== 'debit' || debit.state !== 'compensating' || debit.compensationId !== rollback.transactionId) return undefined;
  const nextId = nextCompensationId(debit.transactionId, debit.compensationId);
  if (nextId === undefined) return undefined;
  const started = await deps.store.beginCompensation({
    debit,
    error: debit.error ?? codedError('WALLET_UNAVAILABLE'),
    attempts: debit.attempts,
    lastWalletCode: debit.lastWalletCode,
    history: debit.history,
    compensation: compensationFor(debit, deps.now(), nextId),
    leaseUntil: deps.now() + deps.leaseMs,
    replacing: rollback.transactionId,
  });
  if (started.kind === 'not_pending') return undefined;
  await deps.enqueue(compensationRef(debit, started.compensationId));
  return started.compensationId;
}
