import { parseJson } from '../lib/json';
import { REQUEST_SCHEMAS, type StatusFields } from '../wallet/protocol';
import { viewOf } from './records';
import { emptyBody, fieldIssues, transactionIdParam } from './schemas';
import { errors, type EngineDeps, type LookupResult, type VerifyResult, type WalletStatusView } from './types';

/** The gateway's own record of a transaction, and a wallet `status` check of it. */
export interface Lookups {
  getTransaction(transactionId: string): Promise<LookupResult>;
  verify(transactionId: string, body: unknown): Promise<VerifyResult>;
}

export function createLookups(deps: EngineDeps): Lookups {
  const { wallet, transactions } = deps;

  async function find(transactionId: string) {
    const id = transactionIdParam.safeParse(transactionId);
    if (!id.success) return { kind: 'failed', error: errors.validation([{ field: 'transaction_id', message: id.error.issues[0]?.message ?? 'invalid' }]) } as const;
    const record = await transactions.get(transactionId);
    return record === undefined ? ({ kind: 'failed', error: errors.transactionNotFound() } as const) : ({ kind: 'found', record } as const);
  }

  return {
    async getTransaction(transactionId) {
      const found = await find(transactionId);
      if (found.kind === 'failed') return found;
      return { kind: 'found', view: await viewOf(found.record, transactions) };
    },

    /**
     * Asks the wallet about the record's own action with the fields it was sent with (the stored
     * wallet body). Read-only: the record is not changed by what the wallet says.
     */
    async verify(transactionId, body) {
      const parsed = emptyBody.safeParse(body);
      if (!parsed.success) return { kind: 'failed', error: errors.validation(fieldIssues(parsed.error)) };
      const found = await find(transactionId);
      if (found.kind === 'failed') return found;
      const { record } = found;
      const sent = REQUEST_SCHEMAS[record.kind].parse(parseJson(record.walletBody));
      const fields: StatusFields = {
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
      const outcome = await wallet.call('status', fields);
      const said: WalletStatusView =
        outcome.kind === 'ok'
          ? { outcome: 'ok', walletCode: outcome.response.code, message: outcome.response.message, balance: outcome.response.balance }
          : outcome.kind === 'rejected'
            ? { outcome: 'rejected', walletCode: outcome.code, message: outcome.message, balance: null }
            : { outcome: 'unknown', walletCode: null, message: `no clear answer (${outcome.reason})`, balance: null };
      return { kind: 'verified', view: await viewOf(record, transactions), wallet: said };
    },
  };
}
