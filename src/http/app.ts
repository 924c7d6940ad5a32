import { IncomingMessage, ServerResponse, createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import express, { type Express, type NextFunction, type Request, type RequestHandler, type Response, type Router } from 'express';
import type { EngineEntry } from '../config/registry';
import type { Routing } from '../engine/routing';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';
import { engineApi, isEngineApiRequest } from './engine-api';
import { errorHandler, notFound } from './errors';
import { launchRouter } from './launch';
import { requestIdOf, requestId } from './request-id';
import { logWhenClosed, notedWallet, requestLog, type RequestLog } from './request-log';
import { sendError, sendJson } from './respond';

export interface AppDeps {
  readonly routing: Routing;
  /** The registry's engines now (their keys and wallets; a reload gives a new list). */
  readonly engines: () => readonly EngineEntry[];
  readonly logger: Logger;
  readonly metrics?: Metrics;
  /**
   * The operators' routers (/readyz, /metrics, /admin), mounted before the launch. They get
   * request ids and request logs like every other route.
   */
  readonly extraRouters?: readonly (Router | RequestHandler)[];
  /** The engine API's body deadline; default the contract's 10 s (tests shorten it). */
  readonly bodyTimeoutMs?: number;
}

/**
 * The matched route pattern. `req.baseUrl` is the request's own text of the routers' mount paths,
 * which Express matches ignoring letter case: every mount path here is a lower-case literal, so its
 * lower case is the pattern (one series per route, not one per spelling).
 */
function routeLabel(req: Request): string {
  const route = (req as { route?: { path?: unknown } }).route;
  return typeof route?.path === 'string' ? `${req.baseUrl.toLowerCase()}${route.path}` : 'unmatched';
}

function logged(log: RequestLog) {
  return (req: Request, res: Response, next: NextFunction): void => {
    logWhenClosed(log, req, res, requestIdOf(res), () => routeLabel(req), () => notedWallet(res));
    next();
  };
}

export function createApp(deps: AppDeps): Express {
  const log = requestLog(deps.logger, deps.metrics);
  const engine = engineApi({ routing: deps.routing, engines: deps.engines, logger: deps.logger, log, bodyTimeoutMs: deps.bodyTimeoutMs });
  const app = express();
  // Nothing here benefits from ETags or the banner; a flat query parser is all /launch needs.
  app.disable('etag');
  app.disable('x-powered-by');
  app.set('query parser', 'simple');

  // Every answer says what it is: a browser never guesses another type (a JSON error read as HTML).
  // The engine API first and whole: it is the hot path, and it answers every /engine/v1/ URL itself.
  app.use((req, res, next) => {
    res.setHeader('X-Content-Type-Options', 'nosniff');
    return isEngineApiRequest(req.url) ? engine(req, res) : next();
  });
  app.use(requestId);
  app.use(logged(log));
  app.get('/healthz', (_req, res) => sendJson(res, 200, { status: 'ok' }));
  for (const extra of deps.extraRouters ?? []) app.use(extra);
  app.use(launchRouter(deps.routing));
  app.use((_req, res) => sendError(res, notFound()));
  app.use(errorHandler(deps.logger));
  return app;
}

/**
 * The app's HTTP server, whose requests and responses are born with the app's own prototypes.
 * Express sets those prototypes on every request it handles (`Object.setPrototypeOf` in
 * `app.handle`); on an object built with node's plain ones that re-shapes it after node's HTTP code
 * has already seen it, and node's own per-request code then runs on objects of changing shapes (the
 * cost showed up in node's frames, not Express's). Born with them, the swap is a no-op.
 */
export function createAppServer(app: Express): Server {
  function AppRequest(this: IncomingMessage, socket: Socket): void {
    IncomingMessage.call(this, socket);
  }
  AppRequest.prototype = app.request;
  function AppResponse(this: ServerResponse, req: IncomingMessage, options?: object): void {
    (ServerResponse as unknown as (this: ServerResponse, req: IncomingMessage, options?: object) => void).call(this, req, options);
  }
  AppResponse.prototype = app.response;
  return createServer(
    {
      IncomingMessage: AppRequest as unknown as typeof IncomingMessage,
      ServerResponse: AppResponse as unknown as typeof ServerResponse,
    },
    app,
  );
}
