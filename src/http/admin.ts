import { createHash, timingSafeEqual } from 'node:crypto';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Queue } from 'bullmq';
import express, { Router, type Express, type NextFunction, type Request, type Response } from 'express';
import { z } from 'zod';
import type { RedriveFilter, RedriveManyResult, RedriveResult } from '../duties/redrive';
import type { Actor } from '../console/actions';
import type { EngineError } from '../engine';
import { fieldIssues, transactionIdParam } from '../engine/schemas';
import { errors } from '../engine/types';
import { REGISTRY_ID } from '../config/registry';
import { codedError } from '../lib/error-codes';
import type { Logger } from '../observability/logger';
import type { TransactionStore } from '../store/transactions';
import type { TransactionRecord } from '../store/types';
import { noFraming, sameOriginChanges } from './admin-guards';
import { adminView } from './admin-view';
import { createConsoleRouter, type ConsoleDeps } from './console';
import { notFound } from './errors';
import { failureWindow, type FailureLimit, type FailureWindow } from './failure-window';
import { createHistoryRouter, type HistoryDeps } from './history';
import { requestIdOf } from './request-id';
import { sendError, sendJson } from './respond';

/**
 * The operators' pages under /admin: Bull Board at /admin/queues and the transactions API, all
 * behind HTTP Basic (ADMIN_USER / ADMIN_PASSWORD). Without credentials configured /admin does not
 * exist (404) rather than being open.
 */

export interface AdminCredentials {
  readonly user: string;
  readonly password: string;
}

export interface AdminDeps {
  /** undefined: /admin answers 404. */
  credentials: AdminCredentials | undefined;
  /** Every queue of the project, shown in Bull Board. */
  queues: readonly Queue[];
  /**
   * The transactions API of one wallet of the registry (`?wallet=<id>`), or of the home wallet
   * (`default`, else the registry's first) without one; undefined: the registry holds no such wallet.
   */
  walletAdmin(walletId: string | undefined): WalletAdmin | undefined;
  logger: Logger;
  /** Wrong Basic credentials per client address; default ADMIN_AUTH_LIMIT. */
  authFailures?: FailureWindow;
  /** The operators' money console (pages under /admin, JSON under /admin/api); absent: not served. */
  console?: ConsoleDeps;
  /** Every wallet of the registry as operators see it (no secrets): GET /admin/api/wallets. */
  wallets(): Promise<readonly WalletOverview[]>;
  /** The ledger's history API (/admin/api/history); absent: not served. */
  history?: HistoryDeps;
  /** POST /admin/api/registry/reload: every process of the deployment reads WALLETS_FILE again (contract 11). */
  reloadRegistry?: () => Promise<{ readonly status: number; readonly body: Record<string, unknown> }>;
}

/** The transactions API's view of one wallet. */
export interface WalletAdmin {
  /** The wallet's id in the registry (every admin line about its records names it). */
  readonly id: string;
  readonly transactions: TransactionStore;
  /** Moves a dead record back to pending and queues its retries (src/duties/redrive.ts), in the audit trail as `actor`'s. */
  redrive(transactionId: string, actor: Actor): Promise<RedriveResult>;
  /** The same for every dead record a filter matches, an audit entry for each. */
  redriveMany(filter: RedriveFilter, actor: Actor): Promise<RedriveManyResult>;
}

/** One wallet in GET /admin/api/wallets: no URL (it may hold credentials), no secret. */
export interface WalletOverview {
  readonly id: string;
  readonly provider_id: string;
  readonly breaker: string;
  /** Calls open at the wallet over every gateway and worker process (the others' as of their last second). */
  readonly in_flight: number;
  readonly pending: number;
  readonly dead: number;
}

export const ADMIN_BASE_PATH = '/admin';
export const BULL_BOARD_PATH = `${ADMIN_BASE_PATH}/queues`;
const REALM = 'Basic realm="wallet-gateway admin", charset="UTF-8"';

/**
 * Guessing the admin password: 10 wrong tries from one address within 10 minutes, then that
 * address gets 429 (with Retry-After) until the oldest try is 10 minutes old. Per process.
 */
export const ADMIN_AUTH_LIMIT: FailureLimit = Object.freeze({ max: 10, windowMs: 10 * 60_000, maxKeys: 10_000 });

const unauthorized = (): EngineError => codedError('UNAUTHORIZED', { message: 'the admin routes need HTTP Basic credentials' });

// ---------------------------------------------------------------------------------------------
// Basic auth

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** Parses `Authorization: Basic base64(user:password)`; undefined when absent or malformed. */
export function parseBasic(header: string | undefined): AdminCredentials | undefined {
  const match = /^Basic +([A-Za-z0-9+/=]+) *$/i.exec(header ?? '');
  if (!match) return undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/**
 * Constant-time check of both fields: comparing fixed-length digests hides the lengths too, and
 * both comparisons always run so the time does not tell which one was wrong.
 */
export function credentialsMatch(given: AdminCredentials, expected: AdminCredentials): boolean {
  const userOk = timingSafeEqual(digest(given.user), digest(expected.user));
  const passwordOk = timingSafeEqual(digest(given.password), digest(expected.password));
  return userOk && passwordOk;
}

function basicAuth(expected: AdminCredentials, failures: FailureWindow, logger: Logger) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const client = req.socket.remoteAddress ?? 'unknown';
    // Checked before the credentials: while an address is held back, no guess of it is tried.
    const waitMs = failures.waitMs(client);
    if (waitMs > 0) {
      res.setHeader('Retry-After', String(Math.ceil(waitMs / 1000)));
      sendError(res, codedError('TOO_MANY_ATTEMPTS'));
      return;
    }
    const given = parseBasic(req.headers.authorization);
    if (given && credentialsMatch(given, expected)) {
      res.locals.adminUser = given.user;
      next();
      return;
    }
    if (given) {
      failures.fail(client);
      logger.warn({ method: req.method, path: req.path, client, request_id: requestIdOf(res) }, 'admin: wrong credentials');
    }
    res.setHeader('WWW-Authenticate', REALM);
    sendError(res, unauthorized());
  };
}

// ---------------------------------------------------------------------------------------------
// input

const listQuerySchema = z.strictObject({
  state: z.literal('dead', { error: "only 'dead' can be listed" }),
  offset: z.coerce.number().int().min(0).default(0),
  limit: z.coerce.number().int().min(1).max(100).default(20),
});

// ---------------------------------------------------------------------------------------------
// the router

function disabledRouter(): Router {
  const router = Router();
  router.use(ADMIN_BASE_PATH, (_req: Request, res: Response) => {
    sendError(res, notFound());
  });
  return router;
}

function bullBoardRouter(queues: readonly Queue[]) {
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(BULL_BOARD_PATH);
  createBullBoard({
    // With several shards each queue name comes once per shard: the board names them by shard prefix.
    // Read-only, every queue: each moves money (retries, compensations, terminates) or drives what
    // does (the sweeper, the dead-check). Money moves only through the audited console actions, and
    // nothing an operator types reaches BullMQ (its refusals of odd job ids or priorities were 500s).
    queues: queues.map(
      (queue) => new BullMQAdapter(queue, { readOnlyMode: true, ...(queues.filter((q) => q.name === queue.name).length > 1 ? { prefix: `${queue.opts.prefix ?? ''} ` } : {}) }),
    ),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'Wallet gateway' } },
  });
  // Its API errors (a bad % escape, a bad JSON body, Redis away) go on to the app's one mapping
  // (errors.ts) rather than Bull Board's own: thrown from its error middleware, Express passes them up.
  serverAdapter.setErrorHandler((error) => {
    throw error;
  });
  const app = serverAdapter.getRouter() as Express;
  // Bull Board is an Express app of its own: its banner is on unless turned off there too.
  app.disable('x-powered-by');
  // Its page asks Google Fonts for its typeface: the admin pages load nothing from another host, so
  // the link is left out (the page falls back to the browser's sans-serif).
  const render = (app as unknown as { engines: Record<string, ViewEngine | undefined> }).engines['.ejs'];
  if (render === undefined) throw new Error('Bull Board renders its page with another view engine than ejs: check the font link');
  app.engine('ejs', (path, options, done) => render(path, options, (err, html) => done(err, html?.replace(GOOGLE_FONTS_LINK, ''))));
  return app;
}

/** An Express view engine (app.engines holds them by extension). */
type ViewEngine = (path: string, options: object, done: (err: unknown, html?: string) => void) => void;

const GOOGLE_FONTS_LINK = /<link[^>]*fonts\.googleapis\.com[^>]*>\s*/g;

/**
 * Bull Board's page and API: scripts, styles, fonts and API calls from this host only (its inline
 * style attributes aside), never framed.
 */
const BULL_BOARD_POLICY = "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; base-uri 'self'; form-action 'self'; frame-ancestors 'none'";

/**
 * Bull Board's paging, checked before it reaches BullMQ: a page past what a Redis integer holds
 * was refused inside BullMQ's script, a 500. Its own UI pages by tens to hundreds.
 */
const pagingNumber = (max: number) => z.string().regex(/^[1-9][0-9]{0,9}$/, 'must be a positive whole number').refine((s) => Number(s) <= max, `must be at most ${max}`).optional();
const bullBoardPaging = z.looseObject({ page: pagingNumber(1_000_000_000), jobsPerPage: pagingNumber(1000) });

/** `POST /admin/transactions/redrive`: which dead records (the state is always `dead`). */
const bulkRedriveSchema = z.strictObject({
  state: z.literal('dead').default('dead'),
  kind: z.enum(['debit', 'credit', 'rollback']).optional(),
  /** Died at or after / at or before: ISO 8601 times. */
  from: z.iso.datetime({ offset: true }).transform((t) => new Date(t)).optional(),
  to: z.iso.datetime({ offset: true }).transform((t) => new Date(t)).optional(),
  limit: z.number().int().min(1).max(1000).default(1000),
});

/**
 * Every route under /admin, auth included; mount at the application root (the paths are absolute),
 * after the request-id middleware.
 */
export function createAdminRouter(deps: AdminDeps): Router {
  if (deps.credentials === undefined) return disabledRouter();
  const { logger } = deps;
  const router = Router();

  router.use(ADMIN_BASE_PATH, noFraming, sameOriginChanges, basicAuth(deps.credentials, deps.authFailures ?? failureWindow(ADMIN_AUTH_LIMIT), logger));

  const audit = (res: Response, action: string, fields: Record<string, unknown> = {}): void => {
    logger.info({ admin_user: res.locals.adminUser as string, action, ...fields, request_id: requestIdOf(res) }, 'admin action');
  };

  /** An API call has no note: the audit entry names the endpoint instead. */
  const apiActor = (res: Response, via: string): Actor => ({ user: res.locals.adminUser as string, note: `via ${via}`, requestId: requestIdOf(res) });

  // Bull Board polls its API all the time; only what changes something is worth a log line.
  router.use(BULL_BOARD_PATH, (req: Request, res: Response, next: NextFunction) => {
    res.setHeader('Content-Security-Policy', BULL_BOARD_POLICY);
    if (req.method !== 'GET' && req.method !== 'HEAD') audit(res, 'bull-board', { method: req.method, path: req.path });
    next();
  });
  router.use(`${BULL_BOARD_PATH}/api`, (req: Request, res: Response, next: NextFunction) => {
    const parsed = bullBoardPaging.safeParse(req.query);
    if (parsed.success) next();
    else sendError(res, errors.validation(fieldIssues(parsed.error)));
  });
  router.use(BULL_BOARD_PATH, bullBoardRouter(deps.queues));
  if (deps.console !== undefined) router.use(createConsoleRouter(deps.console));
  if (deps.history !== undefined) router.use(createHistoryRouter(deps.history));

  /** The wallet a transactions route acts on: its `?wallet=`, or the home wallet. */
  function walletOf(req: Request, res: Response): WalletAdmin | undefined {
    const given = req.query.wallet;
    if (given !== undefined && (typeof given !== 'string' || !REGISTRY_ID.test(given))) {
      sendError(res, errors.validation([{ field: 'wallet', message: 'must be one wallet id: 1–32 characters of a-z, 0-9 and -' }]));
      return undefined;
    }
    const found = deps.walletAdmin(given);
    if (found === undefined) sendError(res, codedError('WALLET_NOT_FOUND'));
    return found;
  }

  function parseId(req: Request, res: Response): string | undefined {
    const parsed = transactionIdParam.safeParse(req.params.id);
    if (parsed.success) return parsed.data;
    sendError(res, errors.validation([{ field: 'transaction_id', message: parsed.error.issues[0]?.message ?? 'invalid' }]));
    return undefined;
  }

  router.get(`${ADMIN_BASE_PATH}/transactions`, async (req: Request, res: Response) => {
    const wallet = walletOf(req, res);
    if (wallet === undefined) return;
    const { transactions } = wallet;
    const { wallet: _wallet, ...query } = req.query;
    const parsed = listQuerySchema.safeParse(query);
    if (!parsed.success) {
      sendError(res, errors.validation(fieldIssues(parsed.error)));
      return;
    }
    const { offset, limit, state } = parsed.data;
    audit(res, 'list', { wallet: wallet.id, state, offset, limit });
    const { ids, total } = await transactions.listDead(offset, limit);
    const records = await Promise.all(ids.map((id) => transactions.get(id)));
    // A dead record stays until an operator acts, so a gap here is a record removed by hand.
    const views = await Promise.all(records.filter((r): r is TransactionRecord => r !== undefined).map((r) => adminView(r, transactions)));
    sendJson(res, 200, { transactions: views, total, offset, limit });
  });

  router.get(`${ADMIN_BASE_PATH}/transactions/:id`, async (req: Request, res: Response) => {
    const id = parseId(req, res);
    if (id === undefined) return;
    const wallet = walletOf(req, res);
    if (wallet === undefined) return;
    const { transactions } = wallet;
    audit(res, 'lookup', { wallet: wallet.id, transaction_id: id });
    const record = await transactions.get(id);
    if (!record) {
      sendError(res, errors.transactionNotFound());
      return;
    }
    // The contract's record itself, with the operator fields beside its own (contract section 6).
    sendJson(res, 200, await adminView(record, transactions));
  });

  router.get(`${ADMIN_BASE_PATH}/api/wallets`, async (_req: Request, res: Response) => {
    sendJson(res, 200, { wallets: await deps.wallets() });
  });

  const reloadRegistry = deps.reloadRegistry;
  if (reloadRegistry !== undefined) {
    router.post(`${ADMIN_BASE_PATH}/api/registry/reload`, async (_req: Request, res: Response) => {
      const { status, body } = await reloadRegistry();
      audit(res, 'registry-reload', { status, state: body.state });
      sendJson(res, status, body);
    });
  }

  router.post(`${ADMIN_BASE_PATH}/transactions/redrive`, express.json({ limit: '4kb' }), async (req: Request, res: Response) => {
    const wallet = walletOf(req, res);
    if (wallet === undefined) return;
    // A body of another type is not parsed: read as "no filter" it would redrive every dead record.
    if (req.is('application/json') === false) {
      sendError(res, errors.validation([{ field: 'content-type', message: 'a filter must be sent as application/json' }]));
      return;
    }
    const parsed = bulkRedriveSchema.safeParse(req.body ?? {});
    if (!parsed.success) {
      sendError(res, errors.validation(fieldIssues(parsed.error)));
      return;
    }
    const { kind, from, to, limit } = parsed.data;
    const filterText = [kind && `kind ${kind}`, from && `from ${from.toISOString()}`, to && `to ${to.toISOString()}`, `limit ${limit}`].filter(Boolean).join(', ');
    const result = await wallet.redriveMany({ kind, from: from?.getTime(), to: to?.getTime(), limit }, apiActor(res, `bulk redrive (POST ${ADMIN_BASE_PATH}/transactions/redrive: ${filterText})`));
    audit(res, 'redrive-bulk', { wallet: wallet.id, filter: { state: 'dead', kind, from, to, limit }, redriven: result.redriven, skipped: result.skipped });
    sendJson(res, 202, { redriven: result.redriven, skipped: result.skipped.map((s) => ({ transaction_id: s.transactionId, reason: s.reason })) });
  });

  router.post(`${ADMIN_BASE_PATH}/transactions/:id/redrive`, async (req: Request, res: Response) => {
    const id = parseId(req, res);
    if (id === undefined) return;
    const wallet = walletOf(req, res);
    if (wallet === undefined) return;
    const { transactions } = wallet;
    const result = await wallet.redrive(id, apiActor(res, `POST ${ADMIN_BASE_PATH}/transactions/{id}/redrive`));
    audit(res, 'redrive', { wallet: wallet.id, transaction_id: id, result: result.kind, ...(result.kind === 'not_found' ? {} : { target: result.transactionId }) });
    if (result.kind === 'not_found') {
      sendError(res, errors.transactionNotFound());
      return;
    }
    if (result.kind === 'not_dead') {
      sendError(res, codedError('NOT_DEAD', { message: `transaction ${result.transactionId} is ${result.state}; only a dead transaction can be redriven` }));
      return;
    }
    // For a debit the redriven record is its compensation rollback; the answer shows that one.
    const record = await transactions.get(result.transactionId);
    sendJson(res, 202, { redriven: result.transactionId, transaction: record ? await adminView(record, transactions) : null });
  });

  return router;
}
