import express, { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { recheckAction, redriveAction, resolveAction, type ActionDeps, type ActionResult, type Actor } from '../console/actions';
import { EXPORT_FORMATS, exportChunks, type ExportDeps } from '../console/export';
import {
  bigWins,
  listTransactions,
  overview,
  playerRounds,
  recentAudit,
  staleRounds,
  tokensWaiting,
  transactionDetail,
  walletsHolding,
  type ConsoleWallet,
  type Filter,
  type QueryDeps,
  type TransactionDetail,
  type WalletRecord,
} from '../console/queries';
import { byRound, ledgerHolding, ledgerPlayer, ledgerValue, mergeRows, readLedger, type LedgerHeld, type LedgerRead, type SourcedRow } from '../console/ledger-reads';
import { REGISTRY_ID } from '../config/registry';
import { fieldIssues, transactionIdParam } from '../engine/schemas';
import { errors } from '../engine/types';
import { codedError } from '../lib/error-codes';
import { lateRepeats, roundHistory } from '../ledger/history';
import type { LedgerDb } from '../ledger/db';
import { jsonNumber } from '../lib/json';
import { U64_MAX } from '../lib/schemas';
import type { Logger } from '../observability/logger';
import { adminView } from './admin-view';
import { notFound } from './errors';
import {
  ambiguousPage,
  auditPage,
  bigWinsPage,
  detailPage,
  exportPage,
  lateRepeatsPage,
  ledgerDetailPage,
  ledgerDownPage,
  noticeOf,
  overviewPage,
  playerPage,
  roundPage,
  staleRoundsPage,
  tokensPage,
  transactionsPage,
  type RoundRows,
} from './console-pages';
import { ledgerRecordView, ledgerView } from './history';
import { requestIdOf } from './request-id';
import { sendError, sendJson } from './respond';

/**
 * The operators' money console under /admin (pages) and /admin/api (the same data as JSON). Mounted
 * by the admin router behind its Basic auth, framing refusal and cross-origin refusal of changes.
 *
 * Every wallet of the registry (contract 11): each list, lookup and the export take `wallet=<id>`
 * and without it read every wallet, each row naming its own. A transaction id is unique per wallet
 * only: a lookup or action without `wallet` that finds the id in several wallets answers
 * `409 AMBIGUOUS_TRANSACTION` (a page lists the candidates) and does nothing. An action runs with
 * the record's own wallet (its client, stores and queues) and is audited in that wallet's trail.
 *
 * With a ledger (contract 12), the transaction, round and player pages (and their JSON) read it
 * for what Redis no longer holds, and name each row's source (`redis` or `ledger`). A record only
 * the ledger holds offers no actions: Redis forgot it, so there is nothing to act on. A ledger that
 * does not answer leaves the pages showing what Redis holds, saying so.
 */
export interface ConsoleDeps {
  /** Every wallet of the registry, in its order. */
  readonly queries: QueryDeps;
  /** Each wallet's actions, by wallet id. */
  readonly actions: ReadonlyMap<string, ActionDeps>;
  /** Every wallet of the registry, in its order. */
  readonly exports: ExportDeps;
  /** Where an action on an id no wallet holds is audited: the home wallet's trail. */
  readonly homeWallet: string;
  /** The ledger's reading connections; undefined: no ledger is kept. */
  readonly ledgerDb?: LedgerDb;
  readonly logger: Logger;
}

const emptyAsUndefined = (v: unknown): unknown => (v === '' ? undefined : v);
/** A time as ISO 8601 or an HTML datetime-local (read as UTC), or ms since the epoch. */
const timeText = z.string().transform((s, ctx) => {
  const ms = /^\d+$/.test(s) ? Number(s) : Date.parse(/(Z|[+-]\d\d:\d\d)$/.test(s) ? s : `${s}Z`);
  // Past ±8.64e15 ms a Date is invalid: an export would fail naming its file.
  if (Number.isNaN(new Date(ms).getTime())) ctx.addIssue({ code: 'custom', message: 'must be an ISO 8601 time or ms since the epoch, within the years Dates hold' });
  return ms;
});
const time = z.preprocess(emptyAsUndefined, timeText.optional());
const requiredTime = z.preprocess(emptyAsUndefined, timeText);
const id = z.preprocess(emptyAsUndefined, z.string().regex(/^[0-9]{1,20}$/, 'must be a number').optional());
/** One wallet of the registry; empty or absent: every wallet. */
const walletId = z.string().regex(REGISTRY_ID, 'must be one wallet id: 1–32 characters of a-z, 0-9 and -');
const walletFilter = z.preprocess(emptyAsUndefined, walletId.optional());
/** An audit entry's stream id (`ms-seq`) to page before: both parts fit Redis's 64 bits, and it is above 0-0 (nothing is older). */
const AUDIT_CURSOR = /^\d{1,20}-\d{1,20}$/;
const auditCursor = z
  .string()
  .regex(AUDIT_CURSOR, 'must be an audit entry id like 1732530000000-0')
  // zod runs a refinement even after the pattern failed: BigInt() is only for text the pattern took.
  .refine((s) => !AUDIT_CURSOR.test(s) || (s.split('-').every((part) => BigInt(part) <= U64_MAX) && !/^0+-0+$/.test(s)), 'must be an audit entry id above 0-0')
  .optional();

/** A player's pages: the player from the path and the site from the query, checked together (one answer naming every bad field). */
const playerQuery = z.strictObject({ player_id: z.string().regex(/^[0-9]{1,20}$/, 'must be a number'), site_id: z.string().regex(/^[0-9]{1,20}$/, 'must be a number'), wallet: walletFilter });

const filterSchema = z.strictObject({
  state: z.preprocess(emptyAsUndefined, z.enum(['dead', 'pending']).optional()),
  kind: z.preprocess(emptyAsUndefined, z.enum(['debit', 'credit', 'rollback']).optional()),
  player_id: id,
  site_id: id,
  from: time,
  to: time,
  min_age: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(0).optional()),
  offset: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(0).default(0)),
  limit: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(1).max(500).default(50)),
  index: z.preprocess(emptyAsUndefined, z.enum(['ending', 'failed']).optional()),
  wallet: walletFilter,
});

const actionSchema = z.strictObject({
  note: z.string().trim().min(3, 'a note of at least 3 characters is required').max(500),
  outcome: z.enum(['applied', 'not_applied', 'bet_not_applied']).optional(),
});

const exportSchema = z.strictObject({
  from: requiredTime,
  to: requiredTime,
  player_id: id,
  site_id: id,
  format: z.preprocess(emptyAsUndefined, z.enum(['csv', 'json']).default('csv')),
  status: z.preprocess(emptyAsUndefined, z.enum(['0', '1']).default('0')),
  wallet: walletFilter,
  /** Redis's records (the default), or the ledger's history (contract 12). */
  source: z.preprocess(emptyAsUndefined, z.enum(['redis', 'ledger']).default('redis')),
}).refine((q) => !(q.source === 'ledger' && q.status === '1'), { path: ['status'], message: "a fresh wallet status is not asked for an export from the ledger (source=ledger needs status=0)" });

/** A transaction's page or action: its id (path or `?id=`) and, to tell it from the same id in another wallet, `?wallet=`. */
const lookupQuery = z.looseObject({ wallet: walletFilter });

type FilterInput = z.output<typeof filterSchema>;

function toFilter(q: FilterInput): Filter {
  return { state: q.state, kind: q.kind, playerId: q.player_id, siteId: q.site_id, from: q.from, to: q.to, minAgeSeconds: q.min_age, offset: q.offset, limit: q.limit };
}

/** The query's values as the filter form shows them again. */
function formValues(req: Request): Record<string, string> {
  return Object.fromEntries(Object.entries(req.query).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

function parse<S extends z.ZodType>(schema: S, input: unknown, res: Response): z.output<S> | undefined {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  sendError(res, errors.validation(fieldIssues(parsed.error)));
  return undefined;
}

/**
 * The console's pages run no script at all and load nothing from anywhere (their style is inline),
 * post their forms only here, and are never framed.
 */
const CONSOLE_PAGE_POLICY = "default-src 'none'; script-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

function sendHtml(res: Response, status: number, html: string): void {
  res.status(status).set('Content-Type', 'text/html; charset=utf-8').set('Cache-Control', 'no-store').set('Content-Security-Policy', CONSOLE_PAGE_POLICY).send(html);
}

export function createConsoleRouter(deps: ConsoleDeps): Router {
  const { queries, logger } = deps;
  const router = Router();
  const forms = [express.urlencoded({ extended: false, limit: '16kb' }), express.json({ limit: '16kb' })];
  const walletIds = queries.wallets.map((w) => w.id);
  const byId = new Map(queries.wallets.map((w) => [w.id, w]));
  /** A record as the JSON shows it: its wallet first. */
  const view = async (r: WalletRecord) => ({ wallet: r.wallet, ...(await adminView(r, byId.get(r.wallet)!.store)) });
  const views = (records: readonly WalletRecord[]) => Promise.all(records.map(view));
  const actor = (req: Request, res: Response, note: string): Actor => ({ user: res.locals.adminUser as string, note, requestId: requestIdOf(res) });
  /** The API names a transaction in its path, the pages in the query (`?id=`; see console-pages.ts). */
  const transactionId = (req: Request, res: Response): string | undefined => {
    const parsed = transactionIdParam.safeParse(req.params.id ?? req.query.id);
    if (parsed.success) return parsed.data;
    sendError(res, errors.validation([{ field: 'transaction_id', message: parsed.error.issues[0]?.message ?? 'invalid' }]));
    return undefined;
  };
  /** The wallets a `wallet` filter asks about: that one, or all; an id the registry lacks is 404 WALLET_NOT_FOUND. */
  function scoped(res: Response, wallet: string | undefined): QueryDeps | undefined {
    if (wallet === undefined) return queries;
    const w = byId.get(wallet);
    if (w === undefined) {
      sendError(res, codedError('WALLET_NOT_FOUND'));
      return undefined;
    }
    return { ...queries, wallets: [w] };
  }

  type Located = { kind: 'one'; wallet: ConsoleWallet } | { kind: 'none' } | { kind: 'several'; wallets: string[] };
  /** The wallet of a transaction named by id (and maybe `?wallet=`). */
  async function locate(req: Request, res: Response, txId: string): Promise<Located | undefined> {
    const q = parse(lookupQuery, req.query, res);
    if (q === undefined) return undefined;
    const scope = scoped(res, q.wallet);
    if (scope === undefined) return undefined;
    const holding = await walletsHolding(scope, txId);
    if (holding.length > 1) return { kind: 'several', wallets: holding.map((w) => w.id) };
    if (holding.length === 1) return { kind: 'one', wallet: holding[0]! };
    // Nothing holds it: the action is refused (and audited) in the wallet named, else the home wallet.
    return q.wallet === undefined ? { kind: 'none' } : { kind: 'one', wallet: byId.get(q.wallet)! };
  }
  /** A ledger read's outcome, its failure logged once (the page says it, without the error). */
  async function fromLedger<T>(res: Response, read: (db: LedgerDb) => Promise<T>): Promise<LedgerRead<T>> {
    const got = await readLedger(deps.ledgerDb, read);
    if (got.kind === 'unavailable') logger.warn({ err: got.error, request_id: requestIdOf(res) }, 'ledger read failed: the console shows what Redis holds');
    return got;
  }

  /** A round's rows in one wallet: Redis's records, and the ledger's of records Redis forgot. */
  async function roundRows(res: Response, wallet: string, roundId: string, redisRecords: readonly WalletRecord[]): Promise<RoundRows & { rows: SourcedRow[] }> {
    const ledger = await fromLedger(res, (db) => roundHistory(db, wallet, roundId));
    return { rows: mergeRows(redisRecords, ledgerValue(ledger, [])), ledger };
  }

  /** A row as the JSON shows it, with its source. */
  const sourcedView = async (r: SourcedRow) => (r.source === 'redis' ? { ...(await view(r.origin)), source: r.source } : { ...ledgerView(r.origin), source: r.source });

  type Found =
    | { kind: 'redis'; detail: TransactionDetail; round: RoundRows & { rows: SourcedRow[] } }
    | { kind: 'ledger'; held: LedgerHeld; round: RoundRows & { rows: SourcedRow[] } }
    | { kind: 'several'; wallets: string[] }
    | { kind: 'none' }
    | { kind: 'ledger_unavailable' };
  /** A transaction for its page: from Redis, else from the ledger. */
  async function find(req: Request, res: Response, txId: string): Promise<Found | undefined> {
    const located = await locate(req, res, txId);
    if (located === undefined) return undefined;
    if (located.kind === 'several') return located;
    const detail = located.kind === 'one' ? await transactionDetail(located.wallet, txId) : undefined;
    if (detail !== undefined) return { kind: 'redis', detail, round: await roundRows(res, detail.wallet, detail.record.roundId, detail.round) };
    const held = await fromLedger(res, (db) => ledgerHolding(db, located.kind === 'one' ? [located.wallet.id] : walletIds, txId));
    if (held.kind === 'unavailable') return { kind: 'ledger_unavailable' };
    const found = ledgerValue(held, []);
    if (found.length > 1) return { kind: 'several', wallets: found.map((f) => f.wallet) };
    const one = found[0];
    if (one === undefined) return { kind: 'none' };
    const newest = one.records[0]!.transaction;
    // The round's records Redis still holds (the player's index), beside the ledger's.
    const redisRound = (await playerRounds({ ...queries, wallets: [byId.get(one.wallet)!] }, newest.playerId, newest.siteId, 200)).find((r) => r.roundId === newest.roundId);
    return { kind: 'ledger', held: one, round: await roundRows(res, one.wallet, newest.roundId, redisRound?.records ?? []) };
  }

  /** A transaction only the ledger holds, as the JSON shows it. */
  const ledgerDetailView = async (held: LedgerHeld, round: readonly SourcedRow[]) => {
    // Taken apart so the page's JSON keeps its order: source and actions beside the record's own fields.
    const { changes, earlier_records, ...newest } = ledgerRecordView(held.records);
    return {
      ...newest,
      source: 'ledger',
      actions: 'none: Redis no longer holds this record',
      changes,
      earlier_records,
      audit: held.audit,
      round: await Promise.all(round.map(sourcedView)),
    };
  };

  const ambiguous = (wallets: readonly string[]) => codedError('AMBIGUOUS_TRANSACTION', { message: `this transaction_id is held in wallets ${wallets.join(', ')}; repeat with ?wallet=<id>` });

  /** Runs an action named in the path with the body's note, at the record's own wallet; its log line is the audit trail's twin. */
  async function act(req: Request, res: Response): Promise<{ id: string; wallet: string; result: ActionResult } | undefined> {
    const txId = transactionId(req, res);
    if (txId === undefined) return undefined;
    const body = parse(actionSchema, req.body ?? {}, res);
    if (body === undefined) return undefined;
    const who = actor(req, res, body.note);
    const action = req.params.action;
    if (action !== 'redrive' && action !== 'recheck' && action !== 'resolve') {
      sendError(res, notFound());
      return undefined;
    }
    if (action === 'resolve' && body.outcome === undefined) {
      sendError(res, errors.validation([{ field: 'outcome', message: "a resolution needs 'applied', 'not_applied' or 'bet_not_applied'" }]));
      return undefined;
    }
    const located = await locate(req, res, txId);
    if (located === undefined) return undefined;
    if (located.kind === 'several') {
      logger.info({ admin_user: who.user, action, transaction_id: txId, result: 'ambiguous', wallets: located.wallets, request_id: who.requestId }, 'admin action');
      sendError(res, ambiguous(located.wallets));
      return undefined;
    }
    const wallet = located.kind === 'one' ? located.wallet.id : deps.homeWallet;
    const actions = deps.actions.get(wallet)!;
    let result: ActionResult;
    if (action === 'redrive') result = await redriveAction(actions, txId, who);
    else if (action === 'recheck') result = await recheckAction(actions, txId, who);
    else result = await resolveAction(actions, txId, body.outcome!, who);
    logger.info(
      {
        admin_user: who.user,
        action: result.kind === 'done' ? result.action : action,
        wallet,
        transaction_id: txId,
        result: result.kind,
        ...(result.kind === 'done' ? { target: result.targetId, state_before: result.stateBefore, state_after: result.stateAfter } : {}),
        note: who.note,
        request_id: who.requestId,
      },
      'admin action',
    );
    return { id: txId, wallet, result };
  }

  // ------------------------------------------------------------------ JSON API

  router.get('/admin/api/overview', async (req, res) => {
    const q = parse(z.strictObject({ wallet: walletFilter }), req.query, res);
    if (q === undefined) return;
    const scope = scoped(res, q.wallet);
    if (scope === undefined) return;
    const o = await overview(scope);
    sendJson(res, 200, {
      pending: o.pending,
      dead: o.dead,
      compensating: o.compensating,
      oldest_pending_at: o.oldestPendingAt === null ? null : new Date(o.oldestPendingAt).toISOString(),
      queues: Object.fromEntries(o.queues.map((q) => [q.queue, q.counts])),
      tokens_waiting_for_terminate: o.endingTokens,
      terminates_given_up: o.terminateFailedTokens,
      big_wins_today: o.bigWinsToday.total,
      truncated: o.truncated,
      wallets: o.wallets.map((w) => ({ wallet: w.wallet, pending: w.pending, dead: w.dead, compensating: w.compensating, tokens_waiting_for_terminate: w.endingTokens, terminates_given_up: w.terminateFailedTokens })),
    });
  });

  /** A list route: its filters parsed, the wallets they ask about. */
  function listed(req: Request, res: Response): { q: FilterInput; scope: QueryDeps } | undefined {
    const q = parse(filterSchema, req.query, res);
    if (q === undefined) return undefined;
    const scope = scoped(res, q.wallet);
    return scope === undefined ? undefined : { q, scope };
  }

  router.get('/admin/api/transactions', async (req, res) => {
    const l = listed(req, res);
    if (l === undefined) return;
    const page = await listTransactions(l.scope, toFilter(l.q));
    sendJson(res, 200, { transactions: await views(page.items), total: page.total, truncated: page.truncated, offset: l.q.offset, limit: l.q.limit });
  });

  router.get('/admin/api/stale-rounds', async (req, res) => {
    const l = listed(req, res);
    if (l === undefined) return;
    const page = await staleRounds(l.scope, toFilter(l.q));
    sendJson(res, 200, { rounds: await Promise.all(page.items.map(async (s) => ({ age_seconds: s.ageSeconds, bet: await view(s.bet) }))), total: page.total, truncated: page.truncated });
  });

  router.get('/admin/api/big-wins', async (req, res) => {
    const l = listed(req, res);
    if (l === undefined) return;
    const page = await bigWins(l.scope, toFilter(l.q));
    sendJson(res, 200, {
      wins: await Promise.all(page.items.map(async (w) => ({ over: w.over, bet_amount: w.betAmount === null ? null : jsonNumber(w.betAmount), win: await view(w.win) }))),
      total: page.total,
      truncated: page.truncated,
    });
  });

  router.get('/admin/api/tokens', async (req, res) => {
    const l = listed(req, res);
    if (l === undefined) return;
    const t = await tokensWaiting(l.scope, l.q.index ?? 'ending', l.q.limit);
    sendJson(res, 200, {
      tokens: t.tokens.map((k) => ({
        wallet: k.wallet,
        token_ref: k.tokenRef,
        player_id: k.playerId,
        site_id: k.siteId,
        state: k.state,
        held_by: k.holding,
        decided_at: k.from === null ? null : new Date(k.from).toISOString(),
        attempts: k.attempts,
        last_code: k.lastCode || null,
      })),
      total: t.total,
    });
  });

  router.get('/admin/api/transactions/:id', async (req, res) => {
    const txId = transactionId(req, res);
    if (txId === undefined) return;
    const found = await find(req, res, txId);
    if (found === undefined) return;
    if (found.kind === 'several') return sendError(res, ambiguous(found.wallets));
    if (found.kind === 'none') return sendError(res, errors.transactionNotFound());
    if (found.kind === 'ledger_unavailable') return sendError(res, codedError('LEDGER_UNAVAILABLE', { message: 'Redis does not hold this transaction, and the ledger (PostgreSQL) did not answer; repeat shortly' }));
    if (found.kind === 'ledger') return sendJson(res, 200, { ...(await ledgerDetailView(found.held, found.round.rows)), ledger: found.round.ledger.kind });
    const d = found.detail;
    sendJson(res, 200, {
      ...(await view(d.record)),
      source: 'redis',
      attempt_log: d.attempts.map((a) => ({ at: new Date(a.at).toISOString(), code: a.result, latency_ms: a.latencyMs, wallet_request_id: a.walletRequestId })),
      compensation_record: d.compensation ? await view(d.compensation) : null,
      round: await Promise.all(found.round.rows.map(sourcedView)),
      session: d.session ? { session_id: d.session.sessionId, state: d.session.state, game_id: d.session.gameId, balance: d.session.balance, token_ref: d.session.tokenRef } : null,
      audit: d.audit,
      ledger: found.round.ledger.kind,
    });
  });

  /** A player's rounds in the wallets asked about (in the registry's order): Redis's records and the ledger's of records Redis forgot, newest round first. */
  async function playerHistory(res: Response, scope: QueryDeps, wallet: string | undefined, playerId: string, siteId: string, limit: number) {
    const [redisRounds, ledger] = await Promise.all([playerRounds(scope, playerId, siteId, limit), fromLedger(res, (db) => ledgerPlayer(db, wallet, playerId, siteId, limit))]);
    const rows = mergeRows(redisRounds.flatMap((r) => r.records), ledgerValue(ledger, []));
    const order = (wallet: string): number => walletIds.indexOf(wallet);
    const rounds = byRound(rows).sort((a, b) => order(a.wallet) - order(b.wallet) || b.rows.at(-1)!.createdAt - a.rows.at(-1)!.createdAt);
    return { rounds, ledger };
  }

  router.get('/admin/api/players/:player/rounds', async (req, res) => {
    const q = parse(playerQuery.extend({ limit: filterSchema.shape.limit }), { ...req.query, player_id: req.params.player }, res);
    if (q === undefined) return;
    const scope = scoped(res, q.wallet);
    if (scope === undefined) return;
    const { rounds, ledger } = await playerHistory(res, scope, q.wallet, q.player_id, q.site_id, q.limit);
    sendJson(res, 200, {
      player_id: jsonNumber(q.player_id),
      site_id: jsonNumber(q.site_id),
      rounds: await Promise.all(rounds.map(async (r) => ({ wallet: r.wallet, round_id: r.roundId, transactions: await Promise.all(r.rows.map(sourcedView)) }))),
      ledger: ledger.kind,
    });
  });

  const auditSchema = z.strictObject({ limit: filterSchema.shape.limit, before: auditCursor, wallet: walletFilter });

  router.get('/admin/api/audit', async (req, res) => {
    const q = parse(auditSchema, req.query, res);
    if (q === undefined) return;
    const scope = scoped(res, q.wallet);
    if (scope === undefined) return;
    sendJson(res, 200, { entries: await recentAudit(scope, q.limit, q.before) });
  });

  router.post('/admin/api/transactions/:id/:action', forms, async (req: Request, res: Response) => {
    const done = await act(req, res);
    if (done === undefined) return;
    const { result, wallet } = done;
    if (result.kind === 'not_found') sendError(res, errors.transactionNotFound());
    else if (result.kind === 'not_dead') sendError(res, codedError('NOT_DEAD', { message: `transaction ${result.targetId} is ${result.state ?? 'gone'}; only a dead transaction can be redriven or resolved` }));
    else if (result.kind === 'not_a_bet') sendError(res, errors.validation([{ field: 'outcome', message: `'bet_not_applied' is said of a bet: ${result.targetId} is not a bet's rollback` }]));
    else {
      const record = await byId.get(wallet)!.store.get(result.targetId);
      sendJson(res, 200, {
        action: result.action,
        target: result.targetId,
        state_before: result.stateBefore,
        state_after: result.stateAfter,
        terminate_released: result.terminateReleased,
        compensation_started: result.compensationId ?? null,
        wallet: result.wallet ?? null,
        transaction: record ? await view({ ...record, wallet }) : null,
      });
    }
  });

  router.get('/admin/api/export', async (req, res) => {
    const q = parse(exportSchema, req.query, res);
    if (q === undefined) return;
    const exported = q.wallet === undefined ? deps.exports.wallets : deps.exports.wallets.filter((w) => w.id === q.wallet);
    if (exported.length === 0) return sendError(res, codedError('WALLET_NOT_FOUND'));
    if (q.source === 'ledger' && deps.exports.ledgerDb === undefined) return sendError(res, codedError('NOT_FOUND', { message: 'no ledger: DATABASE_URL is unset, so history is kept in Redis only' }));
    logger.info({ admin_user: res.locals.adminUser as string, action: 'export', source: q.source, wallet: q.wallet ?? null, from: q.from, to: q.to, format: q.format, request_id: requestIdOf(res) }, 'admin action');
    const name = `transactions-${q.wallet === undefined ? '' : `${q.wallet}-`}${new Date(q.from).toISOString().slice(0, 19).replace(/:/g, '')}.${q.format}`;
    res.status(200).set('Content-Type', EXPORT_FORMATS[q.format].contentType).set('Content-Disposition', `attachment; filename="${name}"`).set('Cache-Control', 'no-store');
    const chunks = exportChunks({ ...deps.exports, wallets: exported }, { from: q.from, to: q.to, playerId: q.player_id, siteId: q.site_id, withStatus: q.status === '1', format: q.format, source: q.source });
    for await (const chunk of chunks) {
      if (res.destroyed) return;
      // Backpressure: wait for the client to take what is buffered before reading the next page.
      if (!res.write(chunk)) await new Promise((resolve) => res.once('drain', resolve));
    }
    res.end();
  });

  // ------------------------------------------------------------------ pages

  const now = () => queries.now();

  router.get('/admin', async (req, res) => {
    const q = parse(z.strictObject({ wallet: walletFilter }), req.query, res);
    if (q === undefined) return;
    const scope = scoped(res, q.wallet);
    if (scope === undefined) return;
    sendHtml(res, 200, overviewPage(await overview(scope), formValues(req), walletIds, now()));
  });

  router.get('/admin/transactions-list', async (req, res) => {
    const l = listed(req, res);
    if (l === undefined) return;
    sendHtml(res, 200, transactionsPage(await listTransactions(l.scope, toFilter(l.q)), { ...formValues(req), state: l.q.state ?? 'dead' }, walletIds, now()));
  });

  router.get('/admin/stale-rounds', async (req, res) => {
    const l = listed(req, res);
    if (l === undefined) return;
    sendHtml(res, 200, staleRoundsPage(await staleRounds(l.scope, toFilter(l.q)), formValues(req), walletIds, queries.settings.staleRoundSeconds, now()));
  });

  router.get('/admin/big-wins', async (req, res) => {
    const l = listed(req, res);
    if (l === undefined) return;
    const { bigWinAmount, bigWinMultiplier } = queries.settings;
    const thresholds = `Flagged: a win of at least ${bigWinAmount ?? '(no amount threshold)'}${bigWinMultiplier ? `, or at least ${bigWinMultiplier} × its bet` : ''}.`;
    sendHtml(res, 200, bigWinsPage(await bigWins(l.scope, toFilter(l.q)), formValues(req), walletIds, thresholds, now()));
  });

  router.get('/admin/tokens', async (req, res) => {
    const l = listed(req, res);
    if (l === undefined) return;
    const index = l.q.index ?? 'ending';
    sendHtml(res, 200, tokensPage(index, await tokensWaiting(l.scope, index, l.q.limit), formValues(req), walletIds, now()));
  });

  router.get('/admin/audit', async (req, res) => {
    const q = parse(z.strictObject({ before: auditCursor, wallet: walletFilter }), req.query, res);
    if (q === undefined) return;
    const scope = scoped(res, q.wallet);
    if (scope === undefined) return;
    const entries = await recentAudit(scope, 100, q.before);
    sendHtml(res, 200, auditPage(entries, formValues(req), walletIds, entries.length >= 100 ? entries.at(-1)?.id : undefined));
  });

  router.get('/admin/export', (req, res) => sendHtml(res, 200, exportPage(formValues(req), walletIds)));

  router.get('/admin/players/:player', async (req, res) => {
    const q = parse(playerQuery, { ...req.query, player_id: req.params.player }, res);
    if (q === undefined) return;
    const scope = scoped(res, q.wallet);
    if (scope === undefined) return;
    const { rounds, ledger } = await playerHistory(res, scope, q.wallet, q.player_id, q.site_id, 200);
    sendHtml(res, 200, playerPage(q.player_id, q.site_id, q.wallet, rounds, ledger, now()));
  });

  /** A round of one wallet: its player says where Redis indexes it (the ledger needs only the round). */
  const roundQuery = playerQuery.extend({ id: transactionIdParam, wallet: walletId });

  router.get('/admin/round', async (req, res) => {
    const q = parse(roundQuery, req.query, res);
    if (q === undefined) return;
    const scope = scoped(res, q.wallet);
    if (scope === undefined) return;
    const redisRound = (await playerRounds(scope, q.player_id, q.site_id, 200)).find((r) => r.roundId === q.id);
    sendHtml(res, 200, roundPage(q.wallet, q.id, await roundRows(res, q.wallet, q.id, redisRound?.records ?? []), now()));
  });

  router.get('/admin/late-repeats', async (req, res) => {
    const q = parse(z.strictObject({ wallet: walletFilter }), req.query, res);
    if (q === undefined) return;
    if (scoped(res, q.wallet) === undefined) return;
    sendHtml(res, 200, lateRepeatsPage(await fromLedger(res, (db) => lateRepeats(db, q.wallet, 200)), formValues(req), walletIds));
  });

  /** A transaction's page: from Redis with its actions, else from the ledger without. */
  async function detail(req: Request, res: Response, txId: string, notice: string): Promise<void> {
    const found = await find(req, res, txId);
    if (found === undefined) return;
    if (found.kind === 'several') return sendHtml(res, 409, ambiguousPage(txId, found.wallets));
    if (found.kind === 'none') return sendError(res, errors.transactionNotFound());
    if (found.kind === 'ledger_unavailable') return sendHtml(res, 503, ledgerDownPage(txId));
    if (found.kind === 'ledger') return sendHtml(res, 200, ledgerDetailPage(found.held, found.round, { ...(await ledgerDetailView(found.held, found.round.rows)), ledger: found.round.ledger.kind }, notice, now()));
    sendHtml(res, 200, detailPage(found.detail, found.round, { ...(await view(found.detail.record)), source: 'redis' }, notice, now()));
  }

  router.get('/admin/tx', async (req, res) => {
    const txId = transactionId(req, res);
    if (txId === undefined) return;
    await detail(req, res, txId, '');
  });

  // A form's action answers with the page itself, the outcome on top (the audit entry is below it).
  router.post('/admin/tx/:action', forms, async (req: Request, res: Response) => {
    const done = await act(req, res);
    if (done === undefined) return;
    await detail(req, res, done.id, noticeOf(done.result));
  });

  return router;
}
