import express, { type Express, type Request, type RequestHandler, type Response, type Router } from 'express';
import { pinoHttp } from 'pino-http';
import type { Engine } from '../engine';
import type { Logger } from '../observability/logger';
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
   * Routers mounted before the gateway's own routes (the operators' /readyz, /metrics, /admin of a
   * later issue). They get request ids and request logs like every other route.
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

export function createApp(deps: AppDeps): Express {
  const app = express();
  // Nothing here benefits from ETags or the banner; a flat query parser is all /launch needs.
  app.disable('etag');
  app.disable('x-powered-by');
  app.set('query parser', 'simple');

  app.use(requestId);
  app.use(
    pinoHttp({
      logger: deps.logger,
      genReqId: (req) => req.id,
      customProps: (_req, res) => ({ request_id: (res as unknown as Response).locals?.requestId as string | undefined }),
      customLogLevel: (_req, res, err) => (err !== undefined || res.statusCode >= 500 ? 'error' : 'info'),
      // Only what is safe: never headers (Authorization), bodies or the launch query (the token).
      serializers: {
        req: (req: { method?: string; url?: string }) => ({ method: req.method, path: pathOnly(req.url) }),
        res: (res: { statusCode?: number }) => ({ status: res.statusCode }),
      },
    }),
  );
  const metrics = deps.metrics;
  if (metrics !== undefined) {
    app.use((req, res, next) => {
      res.once('finish', () => metrics.engineRequests.inc({ route: routeLabel(req), status: String(res.statusCode) }));
      next();
    });
  }

  app.get('/healthz', (_req, res) => sendJson(res, 200, { status: 'ok' }));
  for (const extra of deps.extraRouters ?? []) app.use(extra);
  app.use(launchRouter(deps.engine));
  app.use('/engine/v1', engineRouter(deps.engine, deps.engineApiKey));
  app.use((_req, res) => sendError(res, notFound()));
  app.use(errorHandler(deps.logger));
  return app;
}

