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

export interface QueueMetricsOptions {
  metrics: Metrics;
  queues: readonly DepthSource[];
  /** Records in the `dead` state now (the store's dead index); omitted, no gauge is kept. */
  deadCount?: () => Promise<number>;
  logger?: Logger;
  /** A scrape waits at most this long for Redis (BullMQ connections wait for it forever). Default 2000. */
  timeoutMs?: number;
}

export interface QueueMetricsCollector {
  /** Refreshes the gauges; never throws (a scrape still serves the other series when Redis is away). */
  collect(): Promise<void>;
}

const DEAD_GAUGE = 'transactions_dead';

/** The series this module reads from Redis at each scrape: one value for the whole gateway. */
export const SCRAPE_TIME_SERIES: readonly string[] = ['queue_jobs', DEAD_GAUGE];

function deadGauge(metrics: Metrics): Gauge {
  // One gauge per registry, however many collectors are made over it.
  const existing = metrics.registry.getSingleMetric(DEAD_GAUGE);
  if (existing) return existing as Gauge;
  return new Gauge({
    name: DEAD_GAUGE,
    help: 'Transactions in the dead state now: retries exhausted, waiting for an operator',
    registers: [metrics.registry],
    aggregator: 'omit',
  });
}

export function createQueueMetrics(options: QueueMetricsOptions): QueueMetricsCollector {
  const { metrics, queues, deadCount, logger } = options;
  const timeoutMs = options.timeoutMs ?? 2000;
  const dead = deadCount ? deadGauge(metrics) : undefined;

  /** With several shards a queue name comes once per shard: the series is the sum over them. */
  async function collectQueue(name: string): Promise<void> {
    const counts = sumJobCounts(
      await Promise.all(
        queues
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
    for (const state of DEPTH_STATES) metrics.queueDepth.set({ queue: name, state }, value[state]);
  }

  async function collectDead(): Promise<void> {
    if (!dead || !deadCount) return;
    dead.set(await withDeadline(deadCount(), timeoutMs, 'dead count'));
  }

  return {
    async collect() {
      // A stale depth looks like a real one; when a read fails the series is dropped instead.
      metrics.queueDepth.reset();
      dead?.reset();
      const names = [...new Set(queues.map((q) => q.name))];
      const results = await Promise.allSettled([...names.map(collectQueue), collectDead()]);
      const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed.length > 0) {
        logger?.warn({ err: failed[0]!.reason as Error, failures: failed.length }, 'queue metrics: reading Redis failed');
      }
    },
  };
}
