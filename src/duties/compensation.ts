import { parseJson } from '../lib/json';
import type { DebitRef, ShardRef } from '../store/transactions';
import type { NewTransaction } from '../store/types';
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
