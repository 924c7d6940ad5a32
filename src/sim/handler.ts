import { randomUUID, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { constants as h2constants, type Http2ServerRequest, type Http2ServerResponse } from 'node:http2';
import { JsonSyntaxError, jsonNumber, parseJson, stringifyJson } from '../lib/json';
import { Code, walletHttpStatus } from '../wallet/codes';
import { HEALTH_CHECK_PATH, OPERATIONS, OPERATION_PATH, REQUEST_SCHEMAS, type Operation, type SessionFields } from '../wallet/protocol';
import type { RequestSigner } from '../wallet/signer';
import { ADMIN_PREFIX, handleAdmin } from './admin';
import { faultLabel, type CallLog } from './calls';
import type { Faults } from './faults';
import type { SimWallet, WalletResult } from './wallet';

/**
 * One handler for HTTP/1.1 and the HTTP/2 compatibility API: routes the wallet operations, the
 * health check and the admin API, checks auth and signature, applies faults and writes the
 * spec's answer shapes.
 */
export type AnyRequest = IncomingMessage | Http2ServerRequest;
export type AnyResponse = ServerResponse | Http2ServerResponse;

export interface HandlerContext {
  readonly wallet: SimWallet;
  readonly faults: Faults;
  readonly calls: CallLog;
  readonly signer: RequestSigner;
  /** The exact expected Authorization header value. */
  readonly authorization: string;
  readonly hostAllowed: (host: string | undefined) => boolean;
}

const MAX_BODY_BYTES = 1024 * 1024;
const DIGITS = /^(0|[1-9][0-9]*)$/;
const OPERATION_BY_PATH: ReadonlyMap<string, Operation> = new Map(OPERATIONS.map((op) => [OPERATION_PATH[op], op]));
/** What a misbehaving proxy in front of a wallet might send. */
const NON_JSON_BODY = '<html><body><h1>502 Bad Gateway</h1></body></html>';

function sleep(ms: number): Promise<void> {
  // unref: a pending delay must not keep a closing process alive.
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

function send(res: AnyResponse, status: number, body: string, contentType = 'application/json'): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

function sendEmpty(res: AnyResponse, status: number): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status);
  res.end();
}

/** Breaks the exchange without an answer: the HTTP/2 stream is reset, an HTTP/1.1 socket destroyed. */
function breakExchange(req: AnyRequest): void {
  if ('stream' in req) req.stream.close(h2constants.NGHTTP2_INTERNAL_ERROR);
  else req.socket.destroy();
}

/** HTTP/2 carries the host as :authority (or, from converting clients, Host). */
function hostOf(req: AnyRequest): string | undefined {
  const host = req.headers[':authority'] ?? req.headers.host;
  return typeof host === 'string' ? host : undefined;
}

function traceHeadersOf(req: AnyRequest): { traceparent: string | undefined; tracestate: string | undefined } {
  const { traceparent, tracestate } = req.headers;
  return { traceparent: typeof traceparent === 'string' ? traceparent : undefined, tracestate: typeof tracestate === 'string' ? tracestate : undefined };
}

function connectionOf(req: AnyRequest): string {
  return `${req.socket.remoteAddress ?? '?'}:${req.socket.remotePort ?? '?'}`;
}

async function readBody(req: AnyRequest): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function sameText(a: string | undefined, b: string): boolean {
  if (a === undefined) return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function failureBody(code: number, message: string): string {
  return stringifyJson({ status: false, code, message, request_id: randomUUID() });
}

/** Callers must accept game_id and site_id as number or string, so answers alternate between the two. */
function successBody(fields: SessionFields, result: Extract<WalletResult, { ok: true }>, alternate: boolean): string {
  const body: Record<string, unknown> = {
    status: true,
    code: Code.Success,
    message: '',
    request_id: randomUUID(),
    token: fields.token,
    player_id: jsonNumber(fields.player_id),
    game_id: alternate && DIGITS.test(fields.game_id) ? jsonNumber(fields.game_id) : fields.game_id,
    site_id: alternate ? fields.site_id : jsonNumber(fields.site_id),
    provider_id: jsonNumber(fields.provider_id),
    balance: jsonNumber(result.balance),
  };
  if (result.transactionStatus !== undefined) body.transaction_status = result.transactionStatus;
  return stringifyJson(body);
}

type Parsed = { ok: true; fields: SessionFields & { transaction_id?: string } } | { ok: false; message: string };

function parseRequest(op: Operation, raw: string): Parsed {
  let json: unknown;
  try {
    json = parseJson(raw);
  } catch (err) {
    if (err instanceof JsonSyntaxError) return { ok: false, message: `body: not JSON (${err.message})` };
    throw err;
  }
  const result = REQUEST_SCHEMAS[op].safeParse(json);
  if (result.success) return { ok: true, fields: result.data };
  const issue = result.error.issues[0];
  const keys = issue && 'keys' in issue ? (issue.keys as string[]).join(', ') : '';
  const field = issue && issue.path.length > 0 ? issue.path.join('.') : keys || 'body';
  return { ok: false, message: `${field}: ${issue?.message ?? 'invalid'}` };
}

export function createHandler(ctx: HandlerContext): (req: AnyRequest, res: AnyResponse) => void {
  let answers = 0;

  async function serveWallet(op: Operation, req: AnyRequest, res: AnyResponse, url: URL, raw: string): Promise<void> {
    const call = ctx.calls.start(op, { path: url.pathname, host: hostOf(req), httpVersion: req.httpVersion, connection: connectionOf(req), ...traceHeadersOf(req) }, raw);
    const fail = (code: number, message: string): void => {
      call.code = code;
      call.httpStatus = walletHttpStatus(code);
      send(res, call.httpStatus, failureBody(code, message));
    };

    const delay = ctx.faults.latencyFor(op);
    if (delay > 0) await sleep(delay);

    // Parsed before the auth checks only so the call log shows what was sent; auth still answers first.
    const parsed = parseRequest(op, raw);
    if (parsed.ok) {
      call.body = parsed.fields;
      call.transactionId = parsed.fields.transaction_id;
    }
    if (!sameText(req.headers.authorization, ctx.authorization)) return fail(Code.InvalidCredentials, 'invalid Basic credentials');
    const signature = req.headers['x-request-signature'];
    if (typeof signature !== 'string' || !ctx.signer.verify(raw, signature)) return fail(Code.InvalidSignature, 'invalid X-Request-Signature');
    if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '')) return fail(Code.Validation, 'content-type: must be application/json');
    if (!parsed.ok) return fail(Code.Validation, parsed.message);

    const decision = ctx.faults.take(op, parsed.fields.transaction_id);
    if (decision) {
      call.fault = faultLabel(decision.action);
      call.faultSource = decision.source;
      switch (decision.action.kind) {
        case 'fail':
          return fail(decision.action.code, 'injected fault');
        case 'nonJson':
          call.httpStatus = 200;
          return send(res, 200, NON_JSON_BODY, 'text/html');
        case 'reset':
          return breakExchange(req);
        case 'hang':
          // An outage: nothing applied, no answer; the exchange stays open until the caller gives up.
          return;
        case 'latency':
          await sleep(decision.action.ms);
          break;
        case 'drop':
          break;
      }
    }

    const result = ctx.wallet.handle(op, parsed.fields as never);
    call.applied = result.ok && result.changed;
    call.code = result.ok ? Code.Success : result.code;
    if (decision?.action.kind === 'drop') {
      // Applied, answer lost: 'hang' leaves the exchange open until the client gives up or the sim closes.
      if (decision.action.mode === 'reset') breakExchange(req);
      return;
    }
    if (!result.ok) return fail(result.code, result.message);
    call.httpStatus = 200;
    answers += 1;
    send(res, 200, successBody(parsed.fields, result, answers % 2 === 0));
  }

  function serveHealth(req: AnyRequest, res: AnyResponse, url: URL, raw: string): void {
    const host = hostOf(req);
    const call = ctx.calls.start('health-check', { path: url.pathname, host, httpVersion: req.httpVersion, connection: connectionOf(req), ...traceHeadersOf(req) }, raw);
    const reply = (status: number, message?: string): void => {
      call.httpStatus = status;
      if (message === undefined) sendEmpty(res, status);
      else send(res, status, stringifyJson({ error: message }));
    };
    if (ctx.faults.isUnhealthy()) return reply(503);
    if (!ctx.hostAllowed(host)) return reply(400, `Host ${String(host)} does not match this wallet`);
    reply(204);
  }

  async function serve(req: AnyRequest, res: AnyResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://sim.invalid');
    const body = await readBody(req);
    if (body === undefined) return send(res, 413, stringifyJson({ error: `body over ${MAX_BODY_BYTES} bytes` }));
    const raw = body.toString('utf8');

    if (url.pathname.startsWith(ADMIN_PREFIX)) {
      const answer = handleAdmin(ctx, req.method ?? 'GET', url, raw);
      return send(res, answer.status, stringifyJson(answer.body));
    }
    const op = OPERATION_BY_PATH.get(url.pathname);
    if (op === undefined && url.pathname !== HEALTH_CHECK_PATH) return send(res, 404, stringifyJson({ error: `no route ${url.pathname}` }));
    if (req.method !== 'POST') return send(res, 405, stringifyJson({ error: 'use POST' }));
    if (op === undefined) return serveHealth(req, res, url, raw);
    return serveWallet(op, req, res, url, raw);
  }

  return (req, res) => {
    serve(req, res).catch((err: unknown) => {
      // A simulator bug, not a wallet answer: say so plainly rather than inventing a wallet code.
      send(res, 500, stringifyJson({ error: `simulator error: ${(err as Error).message}` }));
    });
  };
}
