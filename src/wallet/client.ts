import { performance } from 'node:perf_hooks';
import { Client, Pool, errors, type Dispatcher } from 'undici';
import type { WalletSettings } from '../config/env';
import { JsonSyntaxError, parseJson } from '../lib/json';
import { ATTR, DEFAULT_WALLET, SpanKind, SpanStatusCode, carrierOf, inSpan, tracingOn, type Span, type TraceCarrier } from '../lib/tracing';
import { Code, codeInfo } from './codes';
import {
  HEALTH_CHECK_PATH,
  OPERATION_PATH,
  OPERATIONS,
  encodeRequest,
  failureResponseSchema,
  successResponseSchema,
  type CallContext,
  type Operation,
  type UnknownReason,
  type WalletCallEvent,
  type WalletClient,
  type WalletOutcome,
} from './protocol';
import { createH2Transport, type H2Handler } from './h2-transport';
import { basicAuthHeader, hmacSigner, type RequestSigner } from './signer';

export interface WalletClientOptions {
  settings: WalletSettings;
  signer: RequestSigner;
  /** For logs and metrics; called once per call. Whatever it throws stays here. */
  onCall?: (event: WalletCallEvent) => void;
  /** The wallet's id in the registry, for its spans (default: `default`). */
  walletId?: string;
}

/** A wallet answer is a few hundred bytes; anything near this is not a wallet answer. */
const MAX_RESPONSE_BYTES = 1024 * 1024;

const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** The signer the settings name (contract 2: HMAC of the exact body with WALLET_SIGNING_SECRET). */
export function walletSigner(settings: Pick<WalletSettings, 'WALLET_SIGNING_SECRET' | 'WALLET_SIGNATURE_ALGO' | 'WALLET_SIGNATURE_ENCODING'>): RequestSigner {
  return hmacSigner(settings.WALLET_SIGNING_SECRET, settings.WALLET_SIGNATURE_ALGO, settings.WALLET_SIGNATURE_ENCODING);
}

export function createWalletClient(options: WalletClientOptions): WalletClient {
  const { settings, signer, onCall } = options;
  const base = new URL(settings.WALLET_BASE_URL);
  // HTTP/2 is offered in ALPN only over TLS, and only while WALLET_HTTP2 allows it.
  const h2 = base.protocol === 'https:' && settings.WALLET_HTTP2;
  // The base URL may carry a path prefix; OPERATION_PATH values start with '/'.
  const prefix = base.pathname.replace(/\/+$/, '');
  const paths = Object.fromEntries(OPERATIONS.map((op) => [op, prefix + OPERATION_PATH[op]])) as Record<Operation, string>;
  const healthPath = prefix + HEALTH_CHECK_PATH;
  const timeoutMs = settings.WALLET_TIMEOUT_MS;
  const authorization = basicAuthHeader(settings.WALLET_BASIC_USER, settings.WALLET_BASIC_PASSWORD);

  const common = {
    connect: { rejectUnauthorized: !settings.WALLET_TLS_INSECURE },
    connectTimeout: timeoutMs,
    // Backstops only: the per-call timer in Exchange is the deadline that covers all phases.
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    maxResponseSize: MAX_RESPONSE_BYTES,
  };

  // HTTP/1.1 (plain, or over TLS with WALLET_HTTP2=false or a wallet without h2): one request per
  // connection, up to WALLET_CONNECTIONS of them.
  const pool = new Pool(base.origin, { ...common, connections: settings.WALLET_CONNECTIONS });
  // HTTP/2 over TLS: one multiplexed session (src/wallet/h2-transport.ts).
  const http2 = h2 ? createH2Transport({ origin: base, rejectUnauthorized: !settings.WALLET_TLS_INSECURE, connectTimeoutMs: timeoutMs }) : undefined;
  // Its own connection: the Host header also sets the TLS servername in undici, and a servername
  // change on a pooled client would tear its connection down.
  const healthClient = new Client(base.origin, { ...common, allowH2: h2 });

  function report(event: WalletCallEvent): void {
    if (onCall === undefined) return;
    try {
      onCall(event);
    } catch {
      // A broken log or metric must not turn a wallet answer into an error.
    }
  }

  // Decided once: with tracing off a call makes no span and sends no trace header.
  const walletId = options.walletId ?? DEFAULT_WALLET;
  const traced = tracingOn();

  /** With tracing on, each call is a client span whose context goes to the wallet in traceparent/tracestate. */
  function post(op: Operation, body: string, context: CallContext | undefined): Promise<WalletOutcome> {
    if (!traced) return exchange(op, body, context, undefined, undefined);
    const tryNumber = attemptOf(op, context);
    const attributes = {
      [ATTR.wallet]: walletId,
      [ATTR.operation]: op,
      'server.address': base.host,
      ...(context?.requestId === undefined ? {} : { [ATTR.engineRequestId]: context.requestId }),
      ...(tryNumber === undefined ? {} : { [ATTR.attempt]: tryNumber }),
    };
    return inSpan(`wallet ${op}`, { kind: SpanKind.CLIENT, attributes }, (span) => exchange(op, body, context, span, carrierOf()));
  }

  async function exchange(op: Operation, body: string, context: CallContext | undefined, span: Span | undefined, carrier: TraceCarrier | undefined): Promise<WalletOutcome> {
    const signature = signer.sign(body);
    const start = performance.now();
    const answered = await attempt(op, body, signature, start, carrier);
    const sent = sentFields(body);
    const { outcome, httpStatus, detail } = checkedAgainst(sent, answered);
    if (span !== undefined) annotate(span, sent.get('transaction_id'), outcome, httpStatus);
    report({
      operation: op,
      outcome: outcome.kind,
      code: outcome.kind === 'ok' ? outcome.response.code : outcome.kind === 'rejected' ? outcome.code : null,
      httpStatus,
      walletRequestId: outcome.kind === 'ok' ? outcome.response.request_id : outcome.kind === 'rejected' ? outcome.walletRequestId : undefined,
      latencyMs: outcome.latencyMs,
      transactionId: sent.get('transaction_id'),
      requestId: context?.requestId,
      detail,
    });
    return outcome;
  }

  /** One request; never rejects. Settles by the deadline even while the request still waits for a connection. */
  function attempt(op: Operation, body: string, signature: string, start: number, carrier: TraceCarrier | undefined): Promise<Attempt> {
    return new Promise((resolve) => {
      const exchange = new Exchange(resolve, start, timeoutMs);
      if (http2 === undefined) {
        sendHttp1(paths[op], body, signature, carrier, exchange);
        return;
      }
      http2.send(paths[op], requestHeaders(signature, carrier), body, exchange).then(
        (via) => {
          if (via === 'http/1.1') sendHttp1(paths[op], body, signature, carrier, exchange);
        },
        (err: unknown) => exchange.onError(err as Error),
      );
    });
  }

  /** The headers of every wallet request, over either protocol; the trace context's too when the call is traced. */
  function requestHeaders(signature: string, carrier: TraceCarrier | undefined): Record<string, string> {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json', authorization, 'x-request-signature': signature };
    return carrier === undefined ? headers : Object.assign(headers, carrier);
  }

  function sendHttp1(path: string, body: string, signature: string, carrier: TraceCarrier | undefined, exchange: Exchange): void {
    pool.dispatch({ path, method: 'POST', headers: requestHeaders(signature, carrier), body }, exchange);
  }

  async function health(signal: AbortSignal): Promise<{ kind: WalletOutcome['kind']; httpStatus: number | null; detail: string }> {
    try {
      const res = await healthClient.request({
        path: healthPath,
        method: 'POST',
        headers: ['host', settings.walletHostHeader],
        signal,
      });
      await res.body.dump();
      return { kind: res.statusCode === 204 ? 'ok' : 'rejected', httpStatus: res.statusCode, detail: `HTTP ${res.statusCode}` };
    } catch (err) {
      return { kind: 'unknown', httpStatus: null, detail: describeError(err)[1] };
    }
  }

  let closing: Promise<void> | undefined;

  return {
    call(op, fields, context) {
      return post(op, encodeRequest(op, fields), context);
    },

    send(op, body, context) {
      return post(op, body, context);
    },

    async healthCheck() {
      const start = performance.now();
      const signal = AbortSignal.timeout(timeoutMs);
      const { kind, httpStatus, detail } = await withDeadline(signal, health(signal), () => ({
        kind: 'unknown' as const,
        httpStatus: null,
        detail: `no answer within ${timeoutMs} ms`,
      }));
      report({
        operation: 'health-check',
        outcome: kind,
        code: null,
        httpStatus,
        walletRequestId: undefined,
        latencyMs: performance.now() - start,
        transactionId: undefined,
        requestId: undefined,
        detail,
      });
      return { healthy: kind === 'ok', detail };
    },

    close() {
      closing ??= Promise.all([pool.close(), healthClient.close(), http2?.close()]).then(() => undefined);
      return closing;
    },
  };
}

/** Money calls are tries of one transaction: a call that names no attempt is its first (the inline one). */
function attemptOf(op: Operation, context: CallContext | undefined): number | undefined {
  if (context?.attempt !== undefined) return context.attempt;
  return op === 'debit' || op === 'credit' || op === 'rollback' ? 1 : undefined;
}

/** What a call's span says of its answer: ids and codes only, never a body, a token or a header. */
function annotate(span: Span, transactionId: string | undefined, outcome: WalletOutcome, httpStatus: number | null): void {
  if (transactionId !== undefined) span.setAttribute(ATTR.transactionId, transactionId);
  if (httpStatus !== null) span.setAttribute('http.response.status_code', httpStatus);
  span.setAttribute(ATTR.outcome, outcome.kind);
  switch (outcome.kind) {
    case 'ok':
      span.setAttribute(ATTR.code, outcome.response.code);
      if (outcome.response.request_id !== '') span.setAttribute(ATTR.walletRequestId, outcome.response.request_id);
      return;
    case 'rejected':
      span.setAttribute(ATTR.code, outcome.code);
      if (outcome.walletRequestId !== undefined) span.setAttribute(ATTR.walletRequestId, outcome.walletRequestId);
      span.setStatus({ code: SpanStatusCode.ERROR, message: `wallet code ${outcome.code}` });
      return;
    case 'unknown':
      span.setStatus({ code: SpanStatusCode.ERROR, message: `outcome unknown: ${outcome.reason}` });
  }
}

interface Attempt {
  readonly outcome: WalletOutcome;
  readonly httpStatus: number | null;
  readonly detail: string | undefined;
}

/**
 * One wallet request, settled once: by the answer, by a transport error or by the deadline,
 * whichever comes first; whatever the transport reports after that is ignored. The HTTP/1.1 pool
 * (undici's dispatch API) and the HTTP/2 transport call the same handler methods.
 *
 * It implements the onConnect/onHeaders/onData/onComplete/onError handler methods because those are
 * what undici 7's core calls; a handler with the newer onRequestStart/onResponse* methods is wrapped
 * per request (UnwrapHandler: a controller object, and every response's headers parsed into an
 * object this client never reads).
 */
class Exchange implements Dispatcher.DispatchHandler, H2Handler {
  private settled = false;
  /** undici's abort for this request, handed over only once a connection takes the request. */
  private abort: ((err?: Error) => void) | undefined;
  private readonly timer: NodeJS.Timeout;
  private httpStatus: number | null = null;
  private readonly chunks: Buffer[] = [];
  private bytes = 0;

  constructor(
    private readonly resolve: (attempt: Attempt) => void,
    private readonly start: number,
    private readonly timeoutMs: number,
  ) {
    this.timer = setTimeout(() => this.expire(), timeoutMs);
  }

  onConnect(abort: (err?: Error) => void): void {
    // Settled already means the deadline passed while the request was queued: it must not go out now.
    if (this.settled) abort();
    else this.abort = abort;
  }

  onHeaders(statusCode: number): boolean {
    // A 1xx interim answer is followed by the real one.
    if (statusCode >= 200) this.httpStatus = statusCode;
    return true;
  }

  onData(chunk: Buffer): boolean {
    this.bytes += chunk.length;
    // undici enforces maxResponseSize on HTTP/1.1 only; this covers HTTP/2 with the same error.
    if (this.bytes > MAX_RESPONSE_BYTES) {
      this.abort?.(new errors.ResponseExceededMaxSizeError());
      return false;
    }
    this.chunks.push(chunk);
    return true;
  }

  onComplete(): void {
    if (this.settled) return;
    // undici completes a request only after its final (non-1xx) headers.
    const httpStatus = this.httpStatus as number;
    try {
      const [outcome, detail] = classify(httpStatus, bodyText(this.chunks, this.bytes), performance.now() - this.start);
      this.settle({ outcome, httpStatus, detail });
    } catch (err) {
      this.onError(err as Error);
    }
  }

  onError(err: Error): void {
    if (this.settled) return;
    const [reason, detail] = describeError(err);
    this.settle({ outcome: { kind: 'unknown', reason, detail, latencyMs: performance.now() - this.start }, httpStatus: this.httpStatus, detail });
  }

  private expire(): void {
    const detail = `no answer within ${this.timeoutMs} ms`;
    this.settle({ outcome: { kind: 'unknown', reason: 'timeout', detail, latencyMs: performance.now() - this.start }, httpStatus: null, detail });
    // Frees the socket or HTTP/2 stream; a request still queued is stopped in onConnect instead.
    this.abort?.();
  }

  private settle(attempt: Attempt): void {
    this.settled = true;
    clearTimeout(this.timer);
    this.resolve(attempt);
  }
}

/** The body as text; a UTF-8 byte order mark is dropped, as undici's body.text() does. */
function bodyText(chunks: Buffer[], bytes: number): string {
  const buffer = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, bytes);
  const start = buffer.length > 2 && buffer[0] === 0xef && buffer[1] === 0xbb && buffer[2] === 0xbf ? 3 : 0;
  return buffer.toString('utf8', start);
}

/**
 * Settles at the deadline even when undici cannot: an abort only reaches a request once it has
 * been handed to a connection, so one still queued behind busy connections would wait for them.
 */
function withDeadline<T>(signal: AbortSignal, work: Promise<T>, late: () => T): Promise<T> {
  return new Promise((resolve) => {
    const onAbort = (): void => resolve(late());
    signal.addEventListener('abort', onAbort, { once: true });
    void work.then((value) => {
      signal.removeEventListener('abort', onAbort);
      resolve(value);
    });
  });
}

/** What the wallet echoes of a request (spec: the common fields); a success about others is no answer to it. */
const ECHOED = ['token', 'player_id', 'site_id', 'provider_id'] as const;
/** Longest wallet message or request id kept: a wallet answer is a few hundred bytes. */
const MAX_MESSAGE_CHARS = 500;
const MAX_WALLET_REQUEST_ID_CHARS = 100;

type SentField = (typeof ECHOED)[number] | 'transaction_id';
type SentFields = ReadonlyMap<SentField, string | undefined>;

/** The fields read back from an encoded request: a JSON string, or a number's exact text (encodeRequest's shape). */
const SENT_FIELD = new RegExp(`"(${[...ECHOED, 'transaction_id'].join('|')})":("(?:[^"\\\\]|\\\\.)*"|[0-9][0-9.eE+-]*)`, 'g');

/**
 * The first of each field of an encoded request, as text, read in one pass without parsing the body
 * (send() gets bytes only). A field whose text cannot be read is there as undefined. Inside a JSON
 * string a quote is always escaped, so no value can hide a `"name":` of its own.
 */
function sentFields(requestBody: string): SentFields {
  const found = new Map<SentField, string | undefined>();
  SENT_FIELD.lastIndex = 0;
  for (let match = SENT_FIELD.exec(requestBody); match !== null; match = SENT_FIELD.exec(requestBody)) {
    const field = match[1] as SentField;
    const literal = match[2] as string;
    if (!found.has(field)) found.set(field, literal.startsWith('"') ? stringLiteral(literal) : literal);
  }
  return found;
}

function stringLiteral(literal: string): string | undefined {
  try {
    return JSON.parse(literal) as string;
  } catch {
    return undefined;
  }
}

/**
 * Holds an answer against the request it answers (the bytes sent: a retry only has those):
 * - a success about another token, player, site or provider is an unknown outcome (it says
 *   nothing about this call: a debit is compensated, a credit retried);
 * - no answer's message or request id carries the wallet token on (the engine gets a refusal's
 *   message, the log every request id), and both are kept short.
 */
function checkedAgainst(sent: SentFields, answered: Attempt): Attempt {
  const { outcome } = answered;
  if (outcome.kind !== 'ok' && outcome.kind !== 'rejected') return answered;
  const token = sent.get('token');
  const scrub = (text: string): string => (token === undefined || token === '' || !text.includes(token) ? text : text.split(token).join('[token]'));
  const requestIdOf = (id: string): string | undefined => {
    const scrubbed = scrub(id);
    return scrubbed.length > MAX_WALLET_REQUEST_ID_CHARS ? undefined : scrubbed;
  };
  if (outcome.kind === 'ok') {
    const other = ECHOED.find((field) => {
      const asked = sent.get(field);
      return asked !== undefined && asked !== String(outcome.response[field]);
    });
    if (other !== undefined) {
      const detail = `HTTP ${answered.httpStatus ?? '?'}: a success about another ${other}`;
      return { ...answered, outcome: { kind: 'unknown', reason: 'inconsistent', detail, latencyMs: outcome.latencyMs }, detail };
    }
    const requestId = requestIdOf(outcome.response.request_id) ?? '';
    return requestId === outcome.response.request_id ? answered : { ...answered, outcome: { ...outcome, response: { ...outcome.response, request_id: requestId } } };
  }
  return {
    ...answered,
    outcome: {
      ...outcome,
      message: scrub(outcome.message).slice(0, MAX_MESSAGE_CHARS),
      walletRequestId: outcome.walletRequestId === undefined ? undefined : requestIdOf(outcome.walletRequestId),
    },
  };
}

const isSuccessStatus = (status: number): boolean => status >= 200 && status < 300;

/**
 * Reads the HTTP status together with the body. Returns the outcome and, for the call event, a
 * note when status and body disagree.
 */
function classify(httpStatus: number, text: string, latencyMs: number): [WalletOutcome, string | undefined] {
  const unknown = (reason: UnknownReason, detail: string): [WalletOutcome, string] => [
    { kind: 'unknown', reason, detail, latencyMs },
    detail,
  ];

  let body: unknown;
  try {
    body = parseJson(text);
  } catch (err) {
    if (err instanceof JsonSyntaxError) return unknown('unparseable', `HTTP ${httpStatus}: body is not JSON`);
    throw err;
  }

  const status = typeof body === 'object' && body !== null ? (body as { status?: unknown }).status : undefined;

  if (status === false) {
    const parsed = failureResponseSchema.safeParse(body);
    if (!parsed.success) return unknown('schema', `HTTP ${httpStatus}: failure body ${issueText(parsed.error)}`);
    const { code, message, request_id } = parsed.data;
    if (code === Code.Success) return unknown('inconsistent', `HTTP ${httpStatus}: status false with the success code`);
    const expected = codeInfo(code)?.httpStatus;
    const note =
      isSuccessStatus(httpStatus) || (expected !== undefined && expected !== httpStatus)
        ? `failure code ${code} on HTTP ${httpStatus}${expected === undefined ? '' : ` (the code maps to ${expected})`}`
        : undefined;
    return [{ kind: 'rejected', code, httpStatus, message, walletRequestId: request_id, latencyMs }, note];
  }

  if (status === true) {
    const parsed = successResponseSchema.safeParse(body);
    if (!parsed.success) return unknown('schema', `HTTP ${httpStatus}: success body ${issueText(parsed.error)}`);
    if (parsed.data.code !== Code.Success) return unknown('inconsistent', `HTTP ${httpStatus}: status true with code ${parsed.data.code}`);
    if (!isSuccessStatus(httpStatus)) return unknown('inconsistent', `HTTP ${httpStatus}: success body on an error status`);
    return [{ kind: 'ok', response: parsed.data, httpStatus, latencyMs }, undefined];
  }

  return unknown('schema', `HTTP ${httpStatus}: body has no boolean status`);
}

function issueText(error: { issues: readonly { path: readonly PropertyKey[]; message: string }[] }): string {
  const issue = error.issues[0];
  return issue === undefined ? 'does not match' : `field ${issue.path.map(String).join('.') || '(root)'}: ${issue.message}`;
}

/** Every transport failure leaves the outcome unknown; the reason says whether the deadline cut it. */
function describeError(err: unknown): [UnknownReason, string] {
  const e = err as { name?: unknown; code?: unknown; message?: unknown } | null;
  const name = typeof e?.name === 'string' ? e.name : 'Error';
  const code = typeof e?.code === 'string' ? e.code : undefined;
  const text = `${code ?? name}: ${typeof e?.message === 'string' ? e.message : String(err)}`;
  // AbortSignal.timeout aborts with a DOMException named TimeoutError.
  if (name === 'TimeoutError' || (code !== undefined && TIMEOUT_CODES.has(code))) return ['timeout', text];
  if (code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE') return ['unparseable', text];
  return ['connection', text];
}
