import { viewOf } from '../engine/records';
import { jsonNumber } from '../lib/json';
import type { TransactionStore } from '../store/transactions';
import type { TransactionRecord } from '../store/types';
import { viewBody } from './respond';

/**
 * The contract's record view plus what an operator needs to act. Never the wallet request body
 * (it carries the player's wallet token) nor the token itself.
 */
export async function adminView(record: TransactionRecord, transactions: TransactionStore): Promise<Record<string, unknown>> {
  return {
    ...viewBody(await viewOf(record, transactions)),
    player_id: jsonNumber(record.playerId),
    site_id: jsonNumber(record.siteId),
    currency: record.currency,
    wallet_operation: record.walletOperation,
    wallet_round_id: record.walletRoundId,
    round_closed: record.roundClosed,
    reference_transaction_id: record.referenceTransactionId,
    is_compensation: record.isCompensation,
    // How an operator resolved it when it was dead (`applied` → succeeded, `not_applied` → failed).
    resolution: record.resolution,
    history: record.history,
    error: record.error && {
      code: record.error.code,
      wallet_code: record.error.walletCode,
      message: record.error.message,
      http_status: record.error.httpStatus,
    },
    note: record.note,
    created_at: new Date(record.createdAt).toISOString(),
    updated_at: new Date(record.updatedAt).toISOString(),
  };
}
