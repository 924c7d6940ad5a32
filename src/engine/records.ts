import { codedError } from '../lib/error-codes';
import type { TransactionStore } from '../store/transactions';
import type { TransactionRecord, TransactionState, TransactionView } from '../store/types';
import { failed, errors, type Answer, type EngineError } from './types';

/** The contract's record view (section 4, "Transaction record"). */
export async function viewOf(record: TransactionRecord, transactions: TransactionStore): Promise<TransactionView> {
  let compensation: TransactionView['compensation'] = null;
  if (record.compensationId !== null) {
    const comp = await transactions.get(record.compensationId, transactions.shardOf(record));
    // The compensation record may have expired after its retention; its id stays meaningful.
    compensation = { transaction_id: record.compensationId, state: comp?.state ?? compensatedState(record) };
  }
  return {
    transaction_id: record.transactionId,
    kind: record.kind,
    state: record.state,
    session_id: record.sessionId,
    round_id: record.roundId,
    amount: record.amount,
    attempts: record.attempts,
    last_wallet_code: record.lastWalletCode,
    balance: record.balance,
    compensation,
  };
}

function compensatedState(debit: TransactionRecord): TransactionState {
  return debit.state === 'compensated' ? 'succeeded' : debit.state === 'dead' ? 'dead' : 'pending';
}

/** For a refused record that carries no error (not expected; a safe answer all the same). */
export const UNRECORDED_REFUSAL: EngineError = codedError('WALLET_REJECTED');

/**
 * The answer a repeat of a known transaction gets: the stored outcome, never a new wallet call.
 * A `dead` credit/rollback answers 202 like while it was retried: the gateway still owns it and an
 * operator's redrive may finish it; the engine has nothing to do differently.
 */
export function storedAnswer(record: TransactionRecord, lastKnownBalance: string): Answer {
  const pending = (): Answer => ({
    state: 'pending',
    transactionId: record.transactionId,
    balance: record.balance ?? lastKnownBalance,
    currency: record.currency,
  });
  switch (record.state) {
    case 'succeeded':
      return { state: 'succeeded', transactionId: record.transactionId, balance: record.balance ?? lastKnownBalance, currency: record.currency };
    case 'pending':
      // attempts 0: the first call is still at the wallet, unless the record is held behind its round
      // or was queued while the wallet was down.
      return record.attempts === 0 && !record.deferred && !record.queued ? failed(errors.inProgress()) : pending();
    case 'dead':
      return record.kind === 'debit' ? failed(record.error ?? UNRECORDED_REFUSAL) : pending();
    case 'failed':
    case 'compensating':
    case 'compensated':
      return failed(record.error ?? UNRECORDED_REFUSAL);
  }
}
