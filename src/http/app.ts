import { performance } from 'node:perf_hooks';
import express, { type Express, type NextFunction, type Request, type RequestHandler, type Response, type Router } from 'express';
import type { Engine } from '../engine';
import { unredactedSibling, type Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';
import { errorHandler, notFound } from './errors';
import { requestId } from './request-id';
import { sendError, sendJson } from './respond';
import { engineRouter, launchRouter } from './routes';

export interface AppDeps {
  readonly engine: Engine;
  readonly engineApiKey: string;
  readonly logger: Logger;
  readonly metrics?: Metrics;
  /**
   * The operators' routers (/readyz, /metrics, /admin), mounted after the engine API and before
   * the launch. They get request ids and request logs like every other route.
   */
  readonly extraRouters?: readonly (Router | RequestHandler)[];
}

/** The URL as logged: path only, since a launch query carries the wallet token. */
function pathOnly(url: string | undefined): string {
  const u = url ?? '';
  const q = u.indexOf('?');
  return q < 0 ? u : u.slice(0, q);
}

function routeLabel(req: Request): string {
  const route = (req as { route?: { path?: unknown } }).route;
  return typeof route?.path === 'string' ? `${req.baseUrl}${route.path}` : 'unmatched';
}

/**
 * One line per request, written when its connection is done with it, and the request counter:
 * one 'close' listener for both. Only what is safe: method, the path without its query (a launch
 * query carries the wallet token), status, time; never headers or bodies.
 */
function requestLog(logger: Logger, metrics: Metrics | undefined) {
  const log = unredactedSibling(logger);
  return (req: Request, res: Response, next: NextFunction): void => {
    const start = performance.now();
    res.once('close', () => {
      const finished = res.writableFinished;
      const status = res.statusCode;
      metrics?.engineRequests.inc({ route: routeLabel(req), status: String(status) });
      log[!finished || status >= 500 ? 'error' : 'info'](
        {
          request_id: res.locals.requestId as string,
          req: { method: req.method, path: pathOnly(req.originalUrl) },
          res: { status },
          responseTime: Math.round((performance.now() - start) * 10) / 10,
        },
        finished ? 'request completed' : 'request aborted',
      );
    });
    next();
  };
}

export function createApp(deps: AppDeps): Express {
  const app = express();
  // Nothing here benefits from ETags or the banner; a flat query parser is all /launch needs.
  app.disable('etag');
  app.disable('x-powered-by');
  app.set('query parser', 'simple');

  app.use(requestId);
  app.use(requestLog(deps.logger, deps.metrics));

  app.get('/healthz', (_req, res) => sendJson(res, 200, { status: 'ok' }));
  // The engine API first: it is the hot path, and no other router serves /engine/v1.
  app.use('/engine/v1', engineRouter(deps.engine, deps.engineApiKey));
  for (const extra of deps.extraRouters ?? []) app.use(extra);
  app.use(launchRouter(deps.engine));
  app.use((_req, res) => sendError(res, notFound()));
  app.use(errorHandler(deps.logger));
  return app;
}
