import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * The Prometheus series of a process (gateway or worker). Each process has its own registry;
 * modules receive the `Metrics` object instead of touching a global.
 */
export interface Metrics {
  readonly registry: Registry;
  /** labels: operation, outcome (ok | rejected | unknown), code (wallet code or 'none'), wallet */
  readonly walletCalls: Counter<'operation' | 'outcome' | 'code' | 'wallet'>;
  /** labels: operation, wallet */
  readonly walletLatency: Histogram<'operation' | 'wallet'>;
  /** labels: route, status */
  readonly engineRequests: Counter<'route' | 'status'>;
  /** labels: kind (credit | rollback), code (the code that caused the retry, or 'unknown'), wallet */
  readonly retries: Counter<'kind' | 'code' | 'wallet'>;
  /** labels: result (scheduled | succeeded | dead | not_applied), wallet */
  readonly compensations: Counter<'result' | 'wallet'>;
  /** transactions that became dead; labels: kind, wallet */
  readonly deadTransactions: Counter<'kind' | 'wallet'>;
  /** labels: queue, state (waiting | delayed | active | failed), wallet */
  readonly queueDepth: Gauge<'queue' | 'state' | 'wallet'>;
  /** The wallet circuit breaker as this process last read it: 0 closed, 1 half-open, 2 open; labels: wallet. */
  readonly walletBreakerState: Gauge<'wallet'>;
  /** Seconds since the breaker opened (0 while closed); labels: wallet. */
  readonly walletBreakerOpenSeconds: Gauge<'wallet'>;
  /** Calls not made because the breaker was not closed; labels: call (debit | inline | retry | …), wallet */
  readonly walletBreakerRefused: Counter<'call' | 'wallet'>;
  /** Transitions this process made; labels: to (open | half_open | closed), wallet */
  readonly walletBreakerTransitions: Counter<'to' | 'wallet'>;
  /** Sends not made because this process's share of max_in_flight was in use; labels: call (debit | inline | retry), wallet */
  readonly walletInFlightRefused: Counter<'call' | 'wallet'>;
}

/** The series about one wallet's calls, retries, compensations and breaker: walletMetrics adds their `wallet` label. */
const WALLET_SERIES = [
  'walletCalls',
  'walletLatency',
  'retries',
  'compensations',
  'deadTransactions',
  'walletBreakerState',
  'walletBreakerOpenSeconds',
  'walletBreakerRefused',
  'walletBreakerTransitions',
  'walletInFlightRefused',
] as const satisfies readonly (keyof Metrics)[];

const RECORDING = ['inc', 'dec', 'set', 'observe'] as const;

type Recorder = (labels?: unknown, value?: unknown) => void;

/**
 * The series with `wallet` added to the labels of every value recorded through it. Built once per
 * wallet: the recording methods are its own, anything else reads the series through the prototype.
 * The labels are copied with Object.assign, not a spread: prom-client hashed a spread's copy ~8×
 * slower (a Proxy with `{ ...labels, wallet }` cost 5–6 µs of CPU per wallet call; bench/routing-cost.ts).
 */
function withWallet<T extends object>(series: T, wallet: string): T {
  const view = Object.create(series) as Record<string, Recorder>;
  const methods = series as unknown as Partial<Record<(typeof RECORDING)[number], Recorder>>;
  for (const name of RECORDING) {
    const record = methods[name];
    if (record === undefined) continue;
    // inc(labels?, value?), set(labels?, value), observe(labels?, value): the labels come first when given.
    view[name] = (labels, amount) =>
      typeof labels === 'object' && labels !== null ? record.call(series, Object.assign({}, labels, { wallet }), amount) : record.call(series, { wallet }, labels);
  }
  return view as unknown as T;
}

/**
 * The process's series as one wallet's code records them (contract 11): the same registry, each
 * wallet series labelled `wallet`. The wallet client, the breaker and the worker's processors of a
 * wallet take this view; nothing else changes.
 */
export function walletMetrics(metrics: Metrics, wallet: string): Metrics {
  const scoped: Record<string, unknown> = { ...metrics };
  for (const name of WALLET_SERIES) scoped[name] = withWallet(metrics[name], wallet);
  return scoped as unknown as Metrics;
}

/** How often the event-loop lag histogram takes a sample. */
const EVENT_LOOP_SAMPLE_MS = 100;

export function createMetrics(options: { defaultMetrics?: boolean } = {}): Metrics {
  const registry = new Registry();
  // The event-loop lag histogram samples on a timer of this period: prom-client's 10 ms default
  // woke an idle process 100 times a second (~8 ms of CPU a second on the 2-core box). A stall the
  // lag metrics are there for (tens of ms and up) still lands in the samples.
  if (options.defaultMetrics !== false) collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  return {
    registry,
    walletCalls: new Counter({
      name: 'wallet_calls_total',
      help: 'Wallet calls by operation, outcome and result code',
      labelNames: ['operation', 'outcome', 'code', 'wallet'],
      registers: [registry],
    }),
    walletLatency: new Histogram({
      name: 'wallet_call_duration_seconds',
      help: 'Wallet call latency by operation',
      labelNames: ['operation', 'wallet'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    engineRequests: new Counter({
      name: 'engine_requests_total',
      help: 'Game-engine API requests by route and HTTP status',
      labelNames: ['route', 'status'],
      registers: [registry],
    }),
    retries: new Counter({
      name: 'wallet_retries_total',
      help: 'Credit/rollback retries scheduled, by kind and the code that caused them',
      labelNames: ['kind', 'code', 'wallet'],
      registers: [registry],
    }),
    compensations: new Counter({
      name: 'debit_compensations_total',
      help: 'Debit compensations by result',
      labelNames: ['result', 'wallet'],
      registers: [registry],
    }),
    deadTransactions: new Counter({
      name: 'dead_transactions_total',
      help: 'Transactions whose retries were exhausted (an operator must act)',
      labelNames: ['kind', 'wallet'],
      registers: [registry],
    }),
    queueDepth: new Gauge({
      name: 'queue_jobs',
      help: 'Jobs per queue and state',
      labelNames: ['queue', 'state', 'wallet'],
      // Read from Redis by the scraping process: the same for every process, never summed.
      aggregator: 'omit',
      registers: [registry],
    }),
    // Every process reads the same shared state: the largest is the answer, never the sum.
    walletBreakerState: new Gauge({
      name: 'wallet_breaker_state',
      help: 'Wallet circuit breaker: 0 closed, 1 half-open, 2 open',
      labelNames: ['wallet'],
      aggregator: 'max',
      registers: [registry],
    }),
    walletBreakerOpenSeconds: new Gauge({
      name: 'wallet_breaker_open_seconds',
      help: 'Seconds since the wallet circuit breaker opened (0 while closed)',
      labelNames: ['wallet'],
      aggregator: 'max',
      registers: [registry],
    }),
    walletBreakerRefused: new Counter({
      name: 'wallet_breaker_refused_total',
      help: 'Wallet calls not made because the circuit breaker was not closed, by call',
      labelNames: ['call', 'wallet'],
      registers: [registry],
    }),
    walletBreakerTransitions: new Counter({
      name: 'wallet_breaker_transitions_total',
      help: 'Wallet circuit breaker transitions made by this process, by new state',
      labelNames: ['to', 'wallet'],
      registers: [registry],
    }),
    walletInFlightRefused: new Counter({
      name: 'wallet_in_flight_refused_total',
      help: "Wallet sends not made because the process's share of the wallet's max_in_flight was in use, by call",
      labelNames: ['call', 'wallet'],
      registers: [registry],
    }),
  };
}
