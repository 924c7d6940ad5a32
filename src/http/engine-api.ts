import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { EngineEntry } from '../config/registry';
import { REGISTRY_ID } from '../config/registry';
import type { RequestContext } from '../engine';
import type { Routing, ScopedEngine } from '../engine/routing';
import { errors } from '../engine/types';
import { walletOfSessionId } from '../registry/wallet-layout';
import { ATTR, SpanKind, SpanStatusCode, contextOf, inSpan, tracingOn } from '../lib/tracing';
import type { Logger } from '../observability/logger';
import { bearerOwner, unauthorized } from './auth';
import { readJsonBody } from './body';
import { notFound, thrownToError } from './errors';
import { assignRequestId } from './request-id';
import { pathOnly, type RequestLog } from './request-log';
import { answerReply, errorReply, lookupReply, verifyReply, writeJson, type Reply } from './respond';

/**
 * /engine/v1: the game-engine API of contract section 4, on the bare node request and response.
 * It is the hot path (a bet is a claim, a wallet call and a settle), so it skips Express's
 * per-request work — prototype swaps, a router walk over every layer, res.locals — and dispatches
 * its seven routes by splitting the path once. Everything else stays on the Express app.
 */
const ENGINE_API_PREFIX = '/engine/v1/';

export interface EngineApiDeps {
  readonly routing: Routing;
  /**
   * The registry's engines now: a request's Bearer key tells which one calls, and so its wallets.
   * A reload (contract 11) gives a new list; the keys and scopes are worked out again from it.
   */
  readonly engines: () => readonly EngineEntry[];
  readonly logger: Logger;
  readonly log: RequestLog;
  /** The body deadline; default BODY_TIMEOUT_MS (the contract's 10 s). */
  readonly bodyTimeoutMs?: number;
}

interface Route {
  /** The metric label, as the Express route pattern was. */
  readonly label: string;
  /** Which error field names the path parameter when it cannot be decoded. */
  readonly param: 'session_id' | 'transaction_id';
  readonly readsBody: boolean;
  /** `wallet`: the `?wallet=` of a transaction route. */
  run(engine: ScopedEngine, param: string, body: unknown, context: RequestContext, wallet: string | undefined): Promise<Reply>;
}

const SESSION_ACTIONS = ['bet', 'win', 'refund', 'balance', 'end'] as const;

function routes(): { session: Map<string, Route>; transaction: Route; verify: Route } {
  const sessionRoute = (action: (typeof SESSION_ACTIONS)[number]): [string, Route] => [
    action,
    {
      label: `/engine/v1/sessions/:sessionId/${action}`,
      param: 'session_id',
      readsBody: true,
      run: async (engine, sessionId, body, context) => answerReply(await engine[action](sessionId, body, context)),
    },
  ];
  return {
    session: new Map(SESSION_ACTIONS.map(sessionRoute)),
    transaction: {
      label: '/engine/v1/transactions/:transactionId',
      param: 'transaction_id',
      readsBody: false,
      run: async (engine, id, _body, _context, wallet) => lookupReply(await engine.getTransaction(id, wallet)),
    },
    verify: {
      label: '/engine/v1/transactions/:transactionId/verify',
      param: 'transaction_id',
      readsBody: true,
      run: async (engine, id, body, context, wallet) => verifyReply(await engine.verify(id, body, context, wallet)),
    },
  };
}

/** `/engine/v1/sessions/{id}/{action}` (POST), `/engine/v1/transactions/{id}` (GET), `…/{id}/verify` (POST). */
function match(table: ReturnType<typeof routes>, method: string | undefined, path: string): { route: Route; raw: string } | undefined {
  const parts = path.slice(ENGINE_API_PREFIX.length).split('/');
  const [collection, raw, action] = parts;
  if (raw === undefined || raw === '' || parts.length > 3) return undefined;
  if (collection === 'sessions' && method === 'POST' && action !== undefined) {
    const route = table.session.get(action);
    return route && { route, raw };
  }
  if (collection !== 'transactions') return undefined;
  if (action === undefined) return method === 'GET' ? { route: table.transaction, raw } : undefined;
  return action === 'verify' && method === 'POST' ? { route: table.verify, raw } : undefined;
}

function decode(raw: string): string | undefined {
  if (!raw.includes('%')) return raw;
  try {
    return decodeURIComponent(raw);
  } catch {
    return undefined;
  }
}

/** The `?wallet=` of a transaction route: undefined when not given, null when malformed. */
function walletParam(url: string | undefined): string | undefined | null {
  const query = url?.indexOf('?') ?? -1;
  if (query === -1) return undefined;
  const values = new URLSearchParams(url!.slice(query + 1)).getAll('wallet');
  if (values.length === 0) return undefined;
  return values.length === 1 && REGISTRY_ID.test(values[0]!) ? values[0]! : null;
}

export function isEngineApiRequest(url: string | undefined): boolean {
  return url !== undefined && url.startsWith(ENGINE_API_PREFIX);
}

export function engineApi(deps: EngineApiDeps): (req: IncomingMessage, res: ServerResponse) => void {
  const { logger, log } = deps;
  const table = routes();
  let seen: readonly EngineEntry[] | undefined;
  let scopes = new Map<EngineEntry, ScopedEngine>();
  let callerOf: (header: string | undefined) => EngineEntry | undefined = () => undefined;
  /** Whose key a header carries, in the engines of the registry now (an identity check per request). */
  const callerNow = (header: string | undefined): EngineEntry | undefined => {
    const engines = deps.engines();
    if (engines !== seen) {
      seen = engines;
      scopes = new Map(engines.map((entry) => [entry, deps.routing.scopeOf(entry)]));
      callerOf = bearerOwner(engines);
    }
    return callerOf(header);
  };
  // Decided once: with tracing off a request makes no span.
  const traced = tracingOn();

  /**
   * The wallet a request is about, for its line: a session's id names it; a transaction's is its
   * `?wallet=`, else that of the session in the answer (none for an unknown or ambiguous id).
   */
  function walletOf(route: Route, raw: string, url: string | undefined, reply: Reply): string | undefined {
    if (route.param === 'session_id') return walletOfSessionId(decode(raw) ?? '');
    const given = walletParam(url);
    if (typeof given === 'string') return given;
    const sessionId = reply.body.session_id;
    return typeof sessionId === 'string' ? walletOfSessionId(sessionId) : undefined;
  }

  async function serve(engine: ScopedEngine, route: Route, raw: string, req: IncomingMessage, res: ServerResponse, context: RequestContext): Promise<Reply> {
    const param = decode(raw);
    const wallet = route.param === 'transaction_id' ? walletParam(req.url) : undefined;
    if (!route.readsBody || param === undefined || wallet === null) req.resume();
    if (param === undefined) return errorReply(errors.validation([{ field: route.param, message: 'is not a valid URL path segment' }]));
    if (wallet === null) return errorReply(errors.validation([{ field: 'wallet', message: 'must be one wallet id: 1–32 characters of a-z, 0-9 and -' }]));
    const body = route.readsBody ? await readJsonBody(req, res, deps.bodyTimeoutMs) : {};
    return route.run(engine, param, body, context, wallet);
  }

  return (req, res) => {
    const startedAt = performance.now();
    const requestId = assignRequestId(req, res);
    const path = pathOnly(req.url);
    const answer = (reply: Reply, route: string, wallet?: string): void => {
      const answered = !req.socket.destroyed;
      if (answered) writeJson(res, reply.status, reply.body, requestId);
      log({ requestId, method: req.method, path, route, status: reply.status, startedAt, answered, wallet });
    };
    const caller = callerNow(req.headers.authorization);
    const found = match(table, req.method, path);
    if (caller === undefined) {
      req.resume();
      res.setHeader('WWW-Authenticate', 'Bearer');
      const reply = errorReply(unauthorized());
      answer(reply, 'unmatched', found && walletOf(found.route, found.raw, req.url, reply));
      return;
    }
    if (found === undefined) {
      req.resume();
      answer(errorReply(notFound()), 'unmatched');
      return;
    }
    const { route, raw } = found;
    const engine = scopes.get(caller)!;
    const failed = (err: unknown): Reply => errorReply(thrownToError(err, logger, requestId, path));
    if (!traced) {
      void serve(engine, route, raw, req, res, { requestId }).catch(failed).then((reply) => answer(reply, route.label, walletOf(route, raw, req.url, reply)));
      return;
    }
    // The engine's trace goes on (its traceparent/tracestate), or a new one starts; every wallet
    // call, Redis step and job this request causes is under this span, and so is the request's line.
    void inSpan(
      `${req.method ?? 'POST'} ${route.label}`,
      { kind: SpanKind.SERVER, parent: contextOf(req.headers), attributes: { [ATTR.engineRequestId]: requestId, 'http.request.method': req.method ?? '', 'http.route': route.label } },
      async (span) => {
        const reply = await serve(engine, route, raw, req, res, { requestId }).catch(failed);
        answer(reply, route.label, walletOf(route, raw, req.url, reply));
        span.setAttribute('http.response.status_code', reply.status);
        if (reply.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR, message: `HTTP ${reply.status}` });
      },
    );
  };
}
