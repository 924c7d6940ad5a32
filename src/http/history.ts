import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { REGISTRY_ID } from '../config/registry';
import { fieldIssues, transactionIdParam } from '../engine/schemas';
import { errors } from '../engine/types';
import { codedError } from '../lib/error-codes';
import { jsonNumber } from '../lib/json';
import { u64 } from '../lib/schemas';
import type { LedgerDb } from '../ledger/db';
import { decodeCursor, encodeCursor, lateRepeats, listTransactions, roundHistory, transactionHistory, type LedgerRecord, type LedgerTransaction } from '../ledger/history';
import type { Logger } from '../observability/logger';
import { requestIdOf } from './request-id';
import { sendError, sendJson } from './respond';

/**
 * The ledger's history API under /admin/api/history (contract 12), behind the admin routes' auth:
 * the transactions list (filters, keyset pagination, newest first), one transaction with every
 * change, and a round's transactions. Amounts, balances and ids are JSON numbers with every digit
 * kept. Without a ledger the routes answer 404 saying so; a ledger that does not answer, 503.
 */
export interface HistoryDeps {
  /** undefined: no ledger is kept (DATABASE_URL unset). */
  readonly db: LedgerDb | undefined;
  /** The wallet `…/transactions/{id}` and `…/rounds/{id}` read without `?wallet=`. */
  readonly homeWallet: string;
  readonly logger: Logger;
}

export const HISTORY_PATH = '/admin/api/history';
export const HISTORY_MAX_LIMIT = 500;

const walletId = z.string().regex(REGISTRY_ID, 'must be one wallet id: 1–32 characters of a-z, 0-9 and -');
const time = z.iso.datetime({ offset: true }).transform((t) => Date.parse(t));

const listQuery = z.strictObject({
  wallet: walletId.optional(),
  player_id: u64.optional(),
  site_id: u64.optional(),
  round_id: transactionIdParam.optional(),
  state: z.enum(['pending', 'succeeded', 'failed', 'compensating', 'compensated', 'dead']).optional(),
  kind: z.enum(['debit', 'credit', 'rollback']).optional(),
  from: time.optional(),
  to: time.optional(),
  cursor: z.string().max(512).optional(),
  limit: z.coerce.number().int().min(1).max(HISTORY_MAX_LIMIT).default(50),
});

const oneQuery = z.strictObject({ wallet: walletId.optional() });
const repeatsQuery = z.strictObject({ wallet: walletId.optional(), limit: z.coerce.number().int().min(1).max(HISTORY_MAX_LIMIT).default(100) });

const numberOrNull = (text: string | null) => (text === null ? null : jsonNumber(text));

function errorView(text: string | null): Record<string, unknown> | null {
  if (text === null) return null;
  const e = JSON.parse(text) as { code?: string; walletCode?: number | null; message?: string; httpStatus?: number };
  return { code: e.code ?? null, wallet_code: e.walletCode ?? null, message: e.message ?? null, http_status: e.httpStatus ?? null };
}

/** A ledger row in the transaction record's names (contract 4), with the ledger's own beside them. */
export function ledgerView(t: LedgerTransaction): Record<string, unknown> {
  return {
    wallet: t.wallet,
    transaction_id: t.transactionId,
    kind: t.kind,
    state: t.state,
    session_id: t.sessionId,
    round_id: t.roundId,
    wallet_round_id: t.walletRoundId,
    amount: jsonNumber(t.amount),
    currency: t.currency,
    player_id: jsonNumber(t.playerId),
    site_id: jsonNumber(t.siteId),
    reference_transaction_id: t.referenceId,
    is_compensation: t.isCompensation,
    compensation_id: t.compensationId,
    attempts: t.attempts,
    last_wallet_code: t.lastWalletCode,
    wallet_request_id: t.walletRequestId,
    engine_request_id: t.engineRequestId,
    balance: numberOrNull(t.balance),
    error: errorView(t.error),
    resolution: t.resolution,
    note: t.note,
    change_no: t.changeNo,
    created_at: new Date(t.createdAt).toISOString(),
    changed_at: new Date(t.changedAt).toISOString(),
  };
}

/** A transaction's ledger records (newest first, at least one): the newest with its changes, and the earlier ones beside it. */
export function ledgerRecordView(records: readonly LedgerRecord[]): Record<string, unknown> {
  const [newest, ...earlier] = records;
  return {
    ...ledgerView(newest!.transaction),
    changes: newest!.changes.map(ledgerView),
    // The same id made again after Redis had forgotten the first record (the engine repeated it late).
    earlier_records: earlier.map((r) => ({ ...ledgerView(r.transaction), changes: r.changes.map(ledgerView) })),
  };
}

export function createHistoryRouter(deps: HistoryDeps): Router {
  const router = Router();

  /** Runs a read of the ledger: none kept is a 404 saying so; PostgreSQL down or slow is a 503 naming the ledger, never a 500. */
  const read = async (res: Response, run: (db: LedgerDb) => Promise<void>): Promise<void> => {
    const db = deps.db;
    if (db === undefined) return sendError(res, codedError('NOT_FOUND', { message: 'no ledger: DATABASE_URL is unset, so history is kept in Redis only' }));
    try {
      await run(db);
    } catch (err) {
      deps.logger.warn({ err, request_id: requestIdOf(res) }, 'ledger read failed');
      sendError(res, codedError('LEDGER_UNAVAILABLE'));
    }
  };

  /** A lookup's id from the path parameter `field` (a refusal names it) and its wallet: `?wallet=`, else the home wallet. */
  const parseIdAndWallet = (req: Request, res: Response, field: 'transaction_id' | 'round_id'): { id: string; wallet: string } | undefined => {
    const id = transactionIdParam.safeParse(req.params[field]);
    if (!id.success) {
      sendError(res, errors.validation([{ field, message: id.error.issues[0]?.message ?? 'invalid' }]));
      return undefined;
    }
    const query = oneQuery.safeParse(req.query);
    if (!query.success) {
      sendError(res, errors.validation(fieldIssues(query.error)));
      return undefined;
    }
    return { id: id.data, wallet: query.data.wallet ?? deps.homeWallet };
  };

  router.get(`${HISTORY_PATH}/transactions`, async (req: Request, res: Response) => {
    const parsed = listQuery.safeParse(req.query);
    if (!parsed.success) return sendError(res, errors.validation(fieldIssues(parsed.error)));
    const { cursor: cursorText, limit, wallet, player_id, site_id, round_id, state, kind, from, to } = parsed.data;
    const cursor = cursorText === undefined ? undefined : decodeCursor(cursorText);
    if (cursorText !== undefined && cursor === undefined) return sendError(res, errors.validation([{ field: 'cursor', message: 'must be a cursor this API returned' }]));
    await read(res, async (db) => {
      const page = await listTransactions(db, { wallet, playerId: player_id, siteId: site_id, roundId: round_id, state, kind, from, to }, cursor, limit);
      sendJson(res, 200, { transactions: page.transactions.map(ledgerView), next_cursor: page.next === null ? null : encodeCursor(page.next), limit, source: 'ledger' });
    });
  });

  router.get(`${HISTORY_PATH}/transactions/:transaction_id`, async (req: Request, res: Response) => {
    const asked = parseIdAndWallet(req, res, 'transaction_id');
    if (asked === undefined) return;
    await read(res, async (db) => {
      const records = await transactionHistory(db, asked.wallet, asked.id);
      if (records.length === 0) return sendError(res, errors.transactionNotFound());
      sendJson(res, 200, { ...ledgerRecordView(records), source: 'ledger' });
    });
  });

  router.get(`${HISTORY_PATH}/rounds/:round_id`, async (req: Request, res: Response) => {
    const asked = parseIdAndWallet(req, res, 'round_id');
    if (asked === undefined) return;
    await read(res, async (db) => {
      const transactions = await roundHistory(db, asked.wallet, asked.id);
      if (transactions.length === 0) return sendError(res, codedError('NOT_FOUND', { message: 'the ledger holds no transaction of this round' }));
      sendJson(res, 200, { wallet: asked.wallet, round_id: asked.id, transactions: transactions.map(ledgerView), source: 'ledger' });
    });
  });

  router.get(`${HISTORY_PATH}/late-repeats`, async (req: Request, res: Response) => {
    const query = repeatsQuery.safeParse(req.query);
    if (!query.success) return sendError(res, errors.validation(fieldIssues(query.error)));
    await read(res, async (db) => {
      const found = await lateRepeats(db, query.data.wallet, query.data.limit);
      sendJson(res, 200, {
        late_repeats: found.map((r) => ({
          wallet: r.wallet,
          transaction_id: r.transactionId,
          created_at: new Date(r.createdAt).toISOString(),
          earlier_created_at: new Date(r.earlierCreatedAt).toISOString(),
          flagged_at: new Date(r.flaggedAt).toISOString(),
        })),
        source: 'ledger',
      });
    });
  });

  return router;
}
