import { parseJson } from '../lib/json';
import { walletSessionFields, type SessionStore } from '../store/sessions';
import { Code } from '../wallet/codes';
import type { SettleUpdate } from '../store/transactions';
import type { TransactionKind, TransactionRecord } from '../store/types';
import { debitFieldsSchema, type SessionFields, type StatusFields, type WalletOutcome } from '../wallet/protocol';

/**
 * Wallet `status` is a query, never a retry: it leaves the retry budget alone. Its fields come from
 * the record's stored wallet body while there is one, so it names the very transaction (id, amount,
 * round) sent. A succeeded, failed or compensated record no longer has its body: then the record's
 * own id, amount and wallet round go with `session` (the token, player, site, game, currency of its
 * session and the provider id). undefined: no body and no session, nothing to ask with.
 */
export function statusFieldsFor(
  record: Pick<TransactionRecord, 'kind' | 'transactionId' | 'amount' | 'walletRoundId' | 'walletBody'>,
  session?: SessionFields,
): StatusFields | undefined {
  if (record.walletBody !== '') {
    // credit/rollback bodies carry more fields than a debit's; the debit schema is the shared part.
    const sent = debitFieldsSchema.loose().parse(parseJson(record.walletBody));
    return statusFields(sent, sent.amount, sent.round_id, sent.transaction_id, record.kind);
  }
  if (session === undefined) return undefined;
  return statusFields(session, record.amount, record.walletRoundId, record.transactionId, record.kind);
}

/**
 * The `status` fields of a record as statusFieldsFor gives them, reading the record's session only
 * when the record no longer holds its body (the token lives in one or the other).
 */
export async function statusFieldsOf(
  record: TransactionRecord,
  sessions: Pick<SessionStore, 'profile'>,
  providerId: string,
): Promise<StatusFields | undefined> {
  const session = record.walletBody === '' ? await sessions.profile(record.sessionId) : undefined;
  return statusFieldsFor(record, session && walletSessionFields(session, providerId));
}

// Picked field by field: nothing else a caller's object carries reaches the wallet.
function statusFields(s: SessionFields, amount: string, roundId: string, transactionId: string, action: TransactionKind): StatusFields {
  return {
    token: s.token,
    player_id: s.player_id,
    site_id: s.site_id,
    provider_id: s.provider_id,
    game_id: s.game_id,
    currency: s.currency,
    amount,
    round_id: roundId,
    transaction_id: transactionId,
    action,
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
    lastWalletCode: Code.Success,
    error: null,
    note: DEAD_CHECK_NOTE,
    ...(record.kind === 'rollback' ? { debitState: 'compensated' as const } : {}),
  };
}
