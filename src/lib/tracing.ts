import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  context,
  propagation,
  trace,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';

/**
 * Traces through the OpenTelemetry API only (contract 13). The SDK is loaded by the process that
 * traces (src/observability/tracing.ts); without it every call here is the API's no-op, and each
 * part asks `tracingOn()` once when it is built, so with tracing off the hot path runs none of this.
 */
export { SpanKind, SpanStatusCode, context, trace, type Context, type Span };

/**
 * The tracer every span is made with, asked for per span: a tracer kept from before an SDK was
 * shut down and another started (a test's second gateway) would still feed the first.
 */
const TRACER_NAME = 'wallet-gateway';

/** Span attribute names: what an operator searches a trace by. No token, secret or signature is ever one of them. */
export const ATTR = {
  /** The wallet a call goes to: its id in the registry. */
  wallet: 'wallet.name',
  operation: 'wallet.operation',
  transactionId: 'wallet.transaction_id',
  attempt: 'wallet.attempt',
  code: 'wallet.code',
  outcome: 'wallet.outcome',
  walletRequestId: 'wallet.request_id',
  engineRequestId: 'engine.request_id',
  job: 'job.id',
  queue: 'job.queue',
} as const;

/** The wallet a client names in its spans when it is given no id: the single-wallet variables' wallet. */
export const DEFAULT_WALLET = 'default';

/** Whether a tracing SDK is installed in this process (its W3C propagator is registered). */
export function tracingOn(): boolean {
  return propagation.fields().length > 0;
}

/** W3C trace context as it travels in headers and in job data. */
export interface TraceCarrier {
  traceparent?: string;
  tracestate?: string;
}

/** The carrier of a context (the active one by default); undefined when it holds no trace. */
export function carrierOf(ctx: Context = context.active()): TraceCarrier | undefined {
  const carrier: TraceCarrier = {};
  propagation.inject(ctx, carrier);
  return carrier.traceparent === undefined ? undefined : carrier;
}

/**
 * The context a carrier names: request headers or a job's trace field. The W3C propagator checks
 * the values' format itself; anything it does not accept gives a new trace's root.
 */
export function contextOf(carrier: object | undefined): Context {
  if (carrier === undefined) return ROOT_CONTEXT;
  return propagation.extract<Readonly<Record<string, unknown>>>(ROOT_CONTEXT, carrier as Readonly<Record<string, unknown>>, {
    keys: (c) => Object.keys(c),
    get: (c, key) => {
      const value = c[key];
      return typeof value === 'string' ? value : undefined;
    },
  });
}

export interface SpanOptions {
  readonly kind?: SpanKind;
  readonly attributes?: Attributes;
  /** Default: the active context. */
  readonly parent?: Context;
  /** A throw this says is expected (control flow) leaves the span's status unset. */
  readonly expected?: (err: unknown) => boolean;
}

/**
 * Runs `work` in a new span, a child of `parent` (default: the active context), and ends it when
 * the work settles; a throw marks the span as an error (its message only) and is rethrown.
 */
export async function inSpan<T>(name: string, options: SpanOptions, work: (span: Span) => Promise<T>): Promise<T> {
  const parent = options.parent ?? context.active();
  const span = trace.getTracer(TRACER_NAME).startSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes }, parent);
  try {
    return await context.with(trace.setSpan(parent, span), () => work(span));
  } catch (err) {
    const name = err instanceof Error ? err.name : 'error';
    if (options.expected?.(err) === true) span.setAttribute('error.expected', name);
    else span.setStatus({ code: SpanStatusCode.ERROR, message: name });
    throw err;
  } finally {
    span.end();
  }
}

/**
 * A function that runs as an internal span of its own when tracing is on, and is `fn` itself when it
 * is off (decided once, where the function is built). For steps whose arguments must stay out of
 * traces (a Redis claim holds the wallet body, the token with it): the span has a name only.
 */
export function spanned<A extends unknown[], R>(name: string, fn: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  if (!tracingOn()) return fn;
  return (...args) => inSpan(name, {}, () => fn(...args));
}
