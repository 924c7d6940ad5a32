import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Response } from 'express';
import { performance } from 'node:perf_hooks';
import { lineWriter, logNumber, logString, type Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';

/**
 * One line per request and the request counter. Only what is safe: method, the path without its
 * query (a launch query carries the wallet token), status, time; never headers or bodies.
 */
export interface RequestLine {
  readonly requestId: string;
  readonly method: string | undefined;
  /** From pathOnly(). */
  readonly path: string;
  /** The route pattern for the metric label (bounded cardinality), or 'unmatched'. */
  readonly route: string;
  readonly status: number;
  /** performance.now() when the request arrived. */
  readonly startedAt: number;
  /** False when the client was gone before its answer was written. */
  readonly answered: boolean;
  /** The wallet the request is about (contract 11), when it names one: its session's, its transaction's, its launch's. */
  readonly wallet?: string;
}

export type RequestLog = (line: RequestLine) => void;

/** The URL as logged: path only, since a launch query carries the wallet token. */
export function pathOnly(url: string | undefined): string {
  const u = url ?? '';
  const q = u.indexOf('?');
  return q < 0 ? u : u.slice(0, q);
}

export function requestLog(logger: Logger, metrics: Metrics | undefined): RequestLog {
  // Every field is picked one by one (ids, status, a path without its query): no redaction pass.
  const lines = lineWriter(logger);
  return (line) => {
    metrics?.engineRequests.inc({ route: line.route, status: String(line.status) });
    const level = !line.answered || line.status >= 500 ? 'error' : 'info';
    if (!lines.enabled(level)) return;
    const wallet = line.wallet === undefined ? '' : `,"wallet":${logString(line.wallet)}`;
    // req and res are written as JSON.stringify writes the objects pino was given.
    const method = line.method === undefined ? '' : `"method":${JSON.stringify(line.method)},`;
    const responseTime = Math.round((performance.now() - line.startedAt) * 10) / 10;
    lines.write(
      level,
      `,"request_id":${logString(line.requestId)}${wallet},"req":{${method}"path":${JSON.stringify(line.path)}},"res":{"status":${logNumber(line.status)}},"responseTime":${logNumber(responseTime)}`,
      line.answered ? 'request completed' : 'request aborted',
    );
  };
}

/** For Express routes: the line is written when the connection is done with the response. */
export function logWhenClosed(log: RequestLog, req: IncomingMessage, res: ServerResponse, requestId: string, route: () => string, wallet: () => string | undefined): void {
  const startedAt = performance.now();
  // Read now: a mounted router rewrites req.url while it runs.
  const path = pathOnly(req.url);
  res.once('close', () => {
    log({ requestId, method: req.method, path, route: route(), status: res.statusCode, startedAt, answered: res.writableFinished, wallet: wallet() });
  });
}

/** An Express route notes the wallet its request is about, for the request's line. */
export function noteWallet(res: Response, walletId: string): void {
  res.locals.wallet = walletId;
}

/** The wallet an Express route noted (noteWallet), if any. */
export function notedWallet(res: Response): string | undefined {
  return res.locals.wallet as string | undefined;
}
