import { parseJson } from '../lib/json';
import type { SettleUpdate } from '../store/transactions';
import type { TransactionRecord } from '../store/types';
import { debitFieldsSchema, type StatusFields, type WalletOutcome } from '../wallet/protocol';

/**
 * Wallet `status` is a query, never a retry: it leaves the retry budget alone. Its body is built
 * from the record's stored wallet body, so it names the very transaction (id, amount, round) sent.
 */
export function statusFieldsFor(record: Pick<TransactionRecord, 'kind' | 'walletBody'>): StatusFields {
  // credit/rollback bodies carry more fields than a debit's; the debit schema is the shared part.
  const sent = debitFieldsSchema.loose().parse(parseJson(record.walletBody));
  return {
    token: sent.token,
    player_id: sent.player_id,
    site_id: sent.site_id,
    provider_id: sent.provider_id,
    game_id: sent.game_id,
    currency: sent.currency,
    amount: sent.amount,
    round_id: sent.round_id,
    transaction_id: sent.transaction_id,
    action: record.kind,
  };
}

export const DEAD_CHECK_NOTE = 'applied at the wallet (status check of a dead record)';

/**
 * The slow check of a dead credit or rollback: a success answer to `status` means the wallet holds
 * the transaction, so the record is succeeded and leaves the operators' list. Any other answer
 * leaves it dead (asked again on the next check while the window lasts).
 */
export function deadCheckUpdate(record: Pick<TransactionRecord, 'kind'>, status: WalletOutcome): SettleUpdate | undefined {
  if (status.kind !== 'ok') return undefined;
  return {
    state: 'succeeded',
    expect: ['dead'],
    error: null,
    note: DEAD_CHECK_NOTE,
    ...(record.kind === 'rollback' ? { debitState: 'compensated' as const } : {}),
  };
}
