import { statusFieldsOf } from '../duties/status-check';
import type { WalletOutcome } from '../wallet/protocol';
import { viewOf } from './records';
import { codedError } from '../lib/error-codes';
import { emptyBody, fieldIssues, transactionIdParam } from './schemas';
import { NO_CONTEXT, errors, type EngineDeps, type LookupResult, type RequestContext, type VerifyResult, type WalletStatusView } from './types';

/** The gateway's own record of a transaction, and a wallet `status` check of it. */
export interface Lookups {
  getTransaction(transactionId: string): Promise<LookupResult>;
  verify(transactionId: string, body: unknown, context?: RequestContext): Promise<VerifyResult>;
}

export function createLookups(deps: EngineDeps): Lookups {
  const { wallet, sessions, transactions, config } = deps;

  async function find(transactionId: string) {
    const id = transactionIdParam.safeParse(transactionId);
    if (!id.success) return { kind: 'failed', error: errors.validation([{ field: 'transaction_id', message: id.error.issues[0]?.message ?? 'invalid' }]) } as const;
    const record = await transactions.get(transactionId);
    return record === undefined ? ({ kind: 'failed', error: errors.transactionNotFound() } as const) : ({ kind: 'found', record } as const);
  }

  return {
    async getTransaction(transactionId) {
      const found = await find(transactionId);
      if (found.kind === 'found') return { kind: 'found', view: await viewOf(found.record, transactions) };
      if (found.error.code !== 'TRANSACTION_NOT_FOUND' || deps.ledgerLookup === undefined) return found;
      // Past Redis's retention the ledger still holds the record.
      try {
        const view = await deps.ledgerLookup(transactionId);
        return view === undefined ? found : { kind: 'found', view };
      } catch (err) {
        deps.logger.warn({ err, transaction_id: transactionId }, 'ledger lookup failed');
        return { kind: 'failed', error: codedError('LEDGER_UNAVAILABLE') };
      }
    },

    /**
     * Asks the wallet about the record's own action with the fields it was sent with: the stored
     * wallet body, or, once a final record dropped it, the record's id, amount and wallet round with
     * its session's fields and the provider id. Read-only: the record is not changed by what the
     * wallet says.
     */
    async verify(transactionId, body, context = NO_CONTEXT) {
      const parsed = emptyBody.safeParse(body);
      if (!parsed.success) return { kind: 'failed', error: errors.validation(fieldIssues(parsed.error)) };
      const found = await find(transactionId);
      if (found.kind === 'failed') return found;
      const { record } = found;
      const fields = await statusFieldsOf(record, sessions, config.PROVIDER_ID);
      const said: WalletStatusView = fields === undefined ? NOT_ASKED : statusView(await wallet.call('status', fields, context));
      return { kind: 'verified', view: await viewOf(record, transactions), wallet: said };
    },
  };
}

/**
 * A settled record no longer holds its wallet request, and its session (the token) expired: there
 * is nothing to ask the wallet with. No call is made; the outcome is as unknown as a lost answer.
 */
const NOT_ASKED: WalletStatusView = {
  outcome: 'unknown',
  walletCode: null,
  message: 'not asked: the session expired and the settled record no longer holds its wallet request',
  balance: null,
};

function statusView(outcome: WalletOutcome): WalletStatusView {
  switch (outcome.kind) {
    case 'ok':
      return { outcome: 'ok', walletCode: outcome.response.code, message: outcome.response.message, balance: outcome.response.balance };
    case 'rejected':
      return { outcome: 'rejected', walletCode: outcome.code, message: outcome.message, balance: null };
    case 'unknown':
      return { outcome: 'unknown', walletCode: null, message: `no clear answer (${outcome.reason})`, balance: null };
  }
}
