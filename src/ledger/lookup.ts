import type { TransactionState, TransactionView } from '../store/types';
import type { LedgerDb } from './db';
import { transactionHistory } from './history';

/**
 * A transaction record as the engine API shows it (contract 4), read from the ledger: what
 * GET /engine/v1/transactions/{id} answers once Redis has forgotten the record (contract 12). The
 * newest record of that id in the wallet, its compensation's state from the ledger too.
 */
export async function ledgerRecordView(db: LedgerDb, wallet: string, transactionId: string): Promise<TransactionView | undefined> {
  const [newest] = await transactionHistory(db, wallet, transactionId);
  if (newest === undefined) return undefined;
  const t = newest.transaction;
  let compensation: TransactionView['compensation'] = null;
  if (t.compensationId !== null) {
    const [comp] = await transactionHistory(db, wallet, t.compensationId);
    // As the Redis view does when the compensation's record is gone: the debit's own state says.
    const fallback: TransactionState = t.state === 'compensated' ? 'succeeded' : t.state === 'dead' ? 'dead' : 'pending';
    compensation = { transaction_id: t.compensationId, state: (comp?.transaction.state as TransactionState | undefined) ?? fallback };
  }
  return {
    transaction_id: t.transactionId,
    kind: t.kind as TransactionView['kind'],
    state: t.state as TransactionState,
    session_id: t.sessionId,
    round_id: t.roundId,
    amount: t.amount,
    attempts: t.attempts,
    last_wallet_code: t.lastWalletCode,
    balance: t.balance,
    compensation,
  };
}
