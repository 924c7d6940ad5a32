import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * The Prometheus series of a process (gateway or worker). Each process has its own registry;
 * modules receive the `Metrics` object instead of touching a global.
 */
export interface Metrics {
  readonly registry: Registry;
  /** labels: operation, outcome (ok | rejected | unknown), code (wallet code or 'none') */
  readonly walletCalls: Counter<'operation' | 'outcome' | 'code'>;
  /** labels: operation */
  readonly walletLatency: Histogram<'operation'>;
  /** labels: route, status */
  readonly engineRequests: Counter<'route' | 'status'>;
  /** labels: kind (credit | rollback), code (the code that caused the retry, or 'unknown') */
  readonly retries: Counter<'kind' | 'code'>;
  /** labels: result (scheduled | succeeded | dead | not_applied) */
  readonly compensations: Counter<'result'>;
  /** transactions that became dead; labels: kind */
  readonly deadTransactions: Counter<'kind'>;
  /** labels: queue, state (waiting | delayed | active | failed) */
  readonly queueDepth: Gauge<'queue' | 'state'>;
  /** The wallet circuit breaker as this process last read it: 0 closed, 1 half-open, 2 open. */
  readonly walletBreakerState: Gauge;
  /** Seconds since the breaker opened (0 while closed). */
  readonly walletBreakerOpenSeconds: Gauge;
  /** Calls not made because the breaker was not closed; labels: call (debit | inline | retry | …) */
  readonly walletBreakerRefused: Counter<'call'>;
  /** Transitions this process made; labels: to (open | half_open | closed) */
  readonly walletBreakerTransitions: Counter<'to'>;
}

export function createMetrics(options: { defaultMetrics?: boolean } = {}): Metrics {
  const registry = new Registry();
  if (options.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  return {
    registry,
    walletCalls: new Counter({
      name: 'wallet_calls_total',
      help: 'Wallet calls by operation, outcome and result code',
      labelNames: ['operation', 'outcome', 'code'],
      registers: [registry],
    }),
    walletLatency: new Histogram({
      name: 'wallet_call_duration_seconds',
      help: 'Wallet call latency by operation',
      labelNames: ['operation'],
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
      labelNames: ['kind', 'code'],
      registers: [registry],
    }),
    compensations: new Counter({
      name: 'debit_compensations_total',
      help: 'Debit compensations by result',
      labelNames: ['result'],
      registers: [registry],
    }),
    deadTransactions: new Counter({
      name: 'dead_transactions_total',
      help: 'Transactions whose retries were exhausted (an operator must act)',
      labelNames: ['kind'],
      registers: [registry],
    }),
    queueDepth: new Gauge({
      name: 'queue_jobs',
      help: 'Jobs per queue and state',
      labelNames: ['queue', 'state'],
      // Read from Redis by the scraping process: the same for every process, never summed.
      aggregator: 'omit',
      registers: [registry],
    }),
    // Every process reads the same shared state: the largest is the answer, never the sum.
    walletBreakerState: new Gauge({
      name: 'wallet_breaker_state',
      help: 'Wallet circuit breaker: 0 closed, 1 half-open, 2 open',
      aggregator: 'max',
      registers: [registry],
    }),
    walletBreakerOpenSeconds: new Gauge({
      name: 'wallet_breaker_open_seconds',
      help: 'Seconds since the wallet circuit breaker opened (0 while closed)',
      aggregator: 'max',
      registers: [registry],
    }),
    walletBreakerRefused: new Counter({
      name: 'wallet_breaker_refused_total',
      help: 'Wallet calls not made because the circuit breaker was not closed, by call',
      labelNames: ['call'],
      registers: [registry],
    }),
    walletBreakerTransitions: new Counter({
      name: 'wallet_breaker_transitions_total',
      help: 'Wallet circuit breaker transitions made by this process, by new state',
      labelNames: ['to'],
      registers: [registry],
    }),
  };
}
