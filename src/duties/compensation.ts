import { codedError } from '../lib/error-codes';
import { parseJson } from '../lib/json';
import type { DebitRef, ShardRef, TransactionStore } from '../store/transactions';
import type { NewTransaction, TransactionRecord } from '../store/types';
import { debitFieldsSchema, encodeRequest } from '../wallet/protocol';
import { compensationTransactionId } from './compensation-id';

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
 * An engine refund that stood in for its bet's compensation (linked while its own call was still
 * out) and that the wallet refused for good reversed nothing: the debit's own compensation replaces
 * it. Called right after the refusal is settled (by the gateway that got it), by the refund's job,
 * and by the sweeper when both of those were lost; the debit holds its own token throughout, so an
 * `end` meanwhile waits. Returns the compensation's id, or undefined when the refund stands in for
 * nothing (any more).
 */
export async function replaceRefusedStandIn(
  deps: StandInDeps,
  refund: ShardRef & { readonly referenceTransactionId: string | null; readonly isCompensation: boolean },
  /** The debit, when the caller read it already (the sweeper); read here otherwise. */
  readDebit?: TransactionRecord,
): Promise<string | undefined> {
  if (refund.isCompensation || refund.referenceTransactionId === null) return undefined;
  const debit = readDebit ?? (await deps.store.get(refund.referenceTransactionId, deps.store.shardOf(refund)));
  if (debit?.kind !== 'debit' || debit.state !== 'compensating' || debit.compensationId !== refund.transactionId) return undefined;
  const started = await deps.store.beginCompensation({
    debit,
    error: debit.error ?? codedError('WALLET_UNAVAILABLE'),
    attempts: debit.attempts,
    lastWalletCode: debit.lastWalletCode,
    history: debit.history,
    compensation: compensationFor(debit, deps.now()),
    leaseUntil: deps.now() + deps.leaseMs,
    replacing: refund.transactionId,
  });
  if (started.kind === 'not_pending') return undefined;
  await deps.enqueue(compensationRef(debit, started.compensationId));
  return started.compensationId;
}
