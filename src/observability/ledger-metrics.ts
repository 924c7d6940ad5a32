import { Gauge } from 'prom-client';
import type { LedgerLag } from '../ledger/status';
import type { Metrics } from './metrics';

/**
 * The ledger's lag (contract 12), read from Redis at each scrape: the same for every gateway
 * process, so never summed ('omit': the scraping process adds its own).
 */
export const LEDGER_SERIES: readonly string[] = ['ledger_lag_seconds', 'ledger_outbox_length'];

export interface LedgerMetrics {
  /** Refreshes the gauges; never throws (a failed read drops them for this scrape). */
  collect(): Promise<void>;
}

function gauge(metrics: Metrics, name: string, help: string): Gauge {
  const existing = metrics.registry.getSingleMetric(name);
  if (existing) return existing as Gauge;
  return new Gauge({ name, help, registers: [metrics.registry], aggregator: 'omit' });
}

export function createLedgerMetrics(metrics: Metrics, read: () => Promise<LedgerLag>): LedgerMetrics {
  const lag = gauge(metrics, 'ledger_lag_seconds', 'Age of the oldest record change not yet written to the ledger (0: none waiting)');
  const length = gauge(metrics, 'ledger_outbox_length', 'Record changes and audit entries in the outboxes, waiting for the ledger');
  return {
    async collect() {
      try {
        const now = await read();
        lag.set(now.lagSeconds);
        length.set(now.outboxLength);
      } catch {
        lag.reset();
        length.reset();
      }
    },
  };
}
