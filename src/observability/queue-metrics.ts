import type { Queue } from 'bullmq';
import { Gauge } from 'prom-client';
import { sumJobCounts } from '../duties/queues';
import { withDeadline } from '../lib/deadline';
import type { Logger } from './logger';
import type { Metrics } from './metrics';

/**
 * Queue depths and the dead count, read from Redis when Prometheus scrapes (not on a timer), so an
 * idle gateway costs Redis nothing and a scrape always sees the current numbers.
 */
export const DEPTH_STATES = ['waiting', 'delayed', 'active', 'failed'] as const;

/** What is read of a queue: BullMQ's Queue satisfies it. */
export type DepthSource = Pick<Queue, 'name' | 'getJobCounts'>;

/** One wallet's queues and dead records: its series carry its `wallet` label (contract 11). */
export interface WalletDepthSource {
  readonly wallet: string;
  readonly queues: readonly DepthSource[];
  /** Records of the wallet in the `dead` state now (its store's dead index); omitted, no dead series for it. */
  readonly deadCount?: () => Promise<number>;
}

export interface QueueMetricsOptions {
  metrics: Metrics;
  /** Every wallet of the registry. */
  wallets: readonly WalletDepthSource[];
  logger?: Logger;
  /** A scrape waits at most this long for Redis (BullMQ connections wait for it forever). Default 2000. */
  timeoutMs?: number;
}

export interface QueueMetricsCollector {
  /** Refreshes the gauges; never throws (a scrape still serves the other series when Redis is away). */
  collect(): Promise<void>;
}

const DEAD_GAUGE = 'transactions_dead';

/** The series this module reads from Redis at each scrape: one value per wallet for the whole gateway. */
export const SCRAPE_TIME_SERIES: readonly string[] = ['queue_jobs', DEAD_GAUGE];

function deadGauge(metrics: Metrics): Gauge<'wallet'> {
  // One gauge per registry, however many collectors are made over it.
  const existing = metrics.registry.getSingleMetric(DEAD_GAUGE);
  if (existing) return existing as Gauge<'wallet'>;
  return new Gauge({
    name: DEAD_GAUGE,
    help: 'Transactions in the dead state now: retries exhausted, waiting for an operator',
    labelNames: ['wallet'],
    registers: [metrics.registry],
    aggregator: 'omit',
  });
}

export function createQueueMetrics(options: QueueMetricsOptions): QueueMetricsCollector {
  const { metrics, wallets, logger } = options;
  const timeoutMs = options.timeoutMs ?? 2000;
  const dead = wallets.some((w) => w.deadCount !== undefined) ? deadGauge(metrics) : undefined;

  /** With several shards a queue name comes once per shard: the series is the sum over them. */
  async function collectQueue(source: WalletDepthSource, name: string): Promise<void> {
    const counts = sumJobCounts(
      await Promise.all(
        source.queues
          .filter((q) => q.name === name)
          .map((q) => withDeadline(q.getJobCounts('waiting', 'prioritized', 'delayed', 'active', 'failed'), timeoutMs, `job counts of ${name}`)),
      ),
    );
    const value: Record<(typeof DEPTH_STATES)[number], number> = {
      // Prioritized jobs are waiting jobs kept in another list; operators want them in one number.
      waiting: (counts.waiting ?? 0) + (counts.prioritized ?? 0),
      delayed: counts.delayed ?? 0,
      active: counts.active ?? 0,
      failed: counts.failed ?? 0,
    };
    for (const state of DEPTH_STATES) metrics.queueDepth.set({ queue: name, state, wallet: source.wallet }, value[state]);
  }

  async function collectDead(source: WalletDepthSource): Promise<void> {
    if (!dead || !source.deadCount) return;
    dead.set({ wallet: source.wallet }, await withDeadline(source.deadCount(), timeoutMs, 'dead count'));
  }

  /** One wallet's reads: its queues by name, and its dead count. */
  const reads = (source: WalletDepthSource): Promise<void>[] => [...new Set(source.queues.map((q) => q.name))].map((name) => collectQueue(source, name)).concat(collectDead(source));

  return {
    async collect() {
      // A stale depth looks like a real one; when a read fails the series is dropped instead.
      metrics.queueDepth.reset();
      dead?.reset();
      const results = await Promise.allSettled(wallets.flatMap(reads));
      const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed.length > 0) {
        logger?.warn({ err: failed[0]!.reason as Error, failures: failed.length }, 'queue metrics: reading Redis failed');
      }
    },
  };
}
