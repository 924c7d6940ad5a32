import { Worker, type Job } from 'bullmq';
import type { WorkerConfig } from '../src/config/env';
import { homeWalletId, walletRules, type WalletEntry, type WalletRules } from '../src/config/registry';
import { walletLayout } from '../src/registry/wallet-layout';
import { createReloader, processId, type ReloadResult } from '../src/registry/reload';
import { startReloadBus } from '../src/registry/reload-bus';
import { planSummary } from '../src/registry/reload-plan';
import { QUEUE_NAMES, UPKEEP_JOBS, createQueues, ensureRetryJob, subjectOfJobId, tracedProcessor, type Queues, type RetryJobData, type TerminateJobData } from '../src/duties/queues';
import { createClosers, startWith, type Closers } from '../src/lib/lifecycle';
import { throttledErrorLog } from '../src/observability/error-events';
import { createLogger, type Logger } from '../src/observability/logger';
import { createMetrics, walletMetrics, type Metrics } from '../src/observability/metrics';
import { startTracing } from '../src/observability/tracing';
import { checkEvictionPolicy, closeRedis, createRedis, redisTargetOf } from '../src/store/redis';
import { durabilityFor } from '../src/store/durability';
import { createSessionStore } from '../src/store/sessions';
import { createTransactionStore } from '../src/store/transactions';
import type { WalletClient } from '../src/wallet/protocol';
import { openGuardedWallet } from '../src/duties/wallet-breaker';
import { backoffStrategy } from './backoff';
import { startMetricsServer, type MetricsServer } from './metrics-server';
import { createRetryProcessor } from './retry-processor';
import { inlineCallWindowMs } from '../src/duties/settlement';
import { createTerminateProcessor } from './terminate-processor';
import { startFetchWatchdog, type WorkerSlot } from './fetch-watchdog';
import { deadCheck, sweep, type DeadCheckCursor, type UpkeepDeps } from './upkeep';
import { openLedgerDb } from '../src/ledger/db';
import { startLedgerDrain, type LedgerDrain } from '../src/ledger/drain';

/** The log line of a job taken over from a worker that stopped renewing its lock (the soak counts them). */
export const STALLED_LINE = 'job stalled (its worker stopped renewing it): picked up again';

/**
 * Lock and stall settings for money jobs (docs/background.md):
 * - lockDuration outlasts one whole job run even if every renewal were missed: a wallet call and,
 *   in a triage, a status query, each bounded by WALLET_TIMEOUT_MS, plus Redis round trips. While the
 *   worker lives the lock is renewed every lockDuration/2; when it dies the job is free after it.
 * - stalledInterval = lockDuration: a dead worker's job is back in wait within about two intervals.
 * - maxStalledCount is high: a money job must never fail for stalling. A crash mid-call is counted
 *   by the record itself (the try is recorded before it goes out), so the spec's budget still ends it.
 */
export function lockSettings(walletTimeoutMs: number): { lockDuration: number; stalledInterval: number; maxStalledCount: number } {
  const lockDuration = 2 * walletTimeoutMs + 5_000;
  return { lockDuration, stalledInterval: lockDuration, maxStalledCount: 1_000_000 };
}

/** How often held work looks again: an ending session at its pending set, a round closer at its round. */
export const HELD_RECHECK_MS = 1_000;

/** The timings a retry run keeps, from the worker's configuration and one wallet's rules (one place for the worker and its tests). */
export function retryTimings(config: Pick<WalletRules, 'WALLET_TIMEOUT_MS' | 'RETRY_DELAY_UNIT'> & Pick<WorkerConfig, 'DEAD_CHECK_INTERVAL_MS' | 'DEAD_CHECK_WINDOW_MS' | 'REDIS_MIN_REPLICAS' | 'REDIS_WAIT_MS'>) {
  const locks = lockSettings(config.WALLET_TIMEOUT_MS);
  return {
    unit: config.RETRY_DELAY_UNIT,
    // A record re-driven or found with a live job is left alone this long before the next look.
    graceMs: 2 * locks.lockDuration,
    heldRecheckMs: HELD_RECHECK_MS,
    inFlightMs: locks.lockDuration,
    // Never shorter than before the write-ahead WAIT was counted in: the job lock's lifetime.
    inlineWindowMs: Math.max(locks.lockDuration, inlineCallWindowMs(config)),
    recheckIntervalMs: config.DEAD_CHECK_INTERVAL_MS,
    recheckWindowMs: config.DEAD_CHECK_WINDOW_MS,
  };
}

/** How often each Worker's fetching is looked at (workers/fetch-watchdog.ts): stuck for two looks, it is replaced. */
const FETCH_WATCHDOG_MS = 10_000;

export interface WorkerDeps {
  readonly config: WorkerConfig;
  readonly logger?: Logger;
  readonly metrics?: Metrics;
  /** The home wallet's client (homeWalletId); defaults to the undici client built from the registry. */
  readonly wallet?: WalletClient;
  readonly now?: () => number;
}

export interface RunningWorker {
  /** The home wallet's queues (homeWalletId): they also hold the upkeep schedulers. */
  readonly queues: Queues;
  /** Every wallet's queues, by wallet id. */
  readonly walletQueues: ReadonlyMap<string, Queues>;
  readonly metrics: Metrics;
  /** Base URL of GET /metrics and /healthz; undefined without WORKER_METRICS_PORT. */
  readonly metricsUrl: string | undefined;
  /** Runs the sweeper now (it also runs at start and every SWEEP_INTERVAL_MS). */
  sweepNow(): Promise<void>;
  /** Runs the dead-check now (it also runs every DEAD_CHECK_INTERVAL_MS). */
  deadCheckNow(): Promise<number>;
  /** The ledger's writer (contract 12); undefined without DATABASE_URL. */
  readonly ledger: LedgerDrain | undefined;
  /** Reads WALLETS_FILE again in this process alone (SIGHUP; contract 11). */
  reload(): Promise<ReloadResult>;
  /**
   * Graceful: the jobs in hand finish, no new one starts; then queues, Redis, the wallet client, the
   * metrics port, and the tracing SDK's flush. Once; every step runs even if one fails.
   */
  close(): Promise<void>;
}

/**
 * Starts the background worker: the retry, terminate and upkeep workers plus their schedulers. Each
 * part is deferred on one closer stack as it opens; a start that fails (the metrics port in use, a
 * scheduler Redis refused) closes what it had opened and throws.
 */
export async function startWorker(deps: WorkerDeps): Promise<RunningWorker> {
  const logger = deps.logger ?? createLogger({ level: deps.config.LOG_LEVEL, name: 'worker', traced: deps.config.tracing !== undefined });
  const closers = createClosers((step, err) => logger.error({ err, step }, 'worker close step failed'));
  return startWith(closers, () => openWorker(deps, logger, closers));
}

async function openWorker(deps: WorkerDeps, logger: Logger, closers: Closers): Promise<RunningWorker> {
  const { config } = deps;
  const metrics = deps.metrics ?? createMetrics();
  const now = deps.now ?? Date.now;
  // Before every part that makes spans, closed after all of them: a shutdown's spans are flushed.
  const tracing = await startTracing(config.tracing);
  closers.defer('tracing', () => tracing.close());
  // Then, so a port already in use stops the start before anything else is opened; closed last but
  // tracing, so the final counts stay scrapable while the jobs in hand finish.
  const metricsServer: MetricsServer | undefined =
    config.WORKER_METRICS_PORT === undefined ? undefined : await startMetricsServer(metrics.registry, config.WORKER_METRICS_PORT);
  if (metricsServer !== undefined) closers.defer('metrics port', () => metricsServer.close());
  const target = redisTargetOf(config);
  const redis = createRedis(target, { name: 'worker-store', onError: throttledErrorLog(logger, 'redis error (store connection)') });
  closers.defer('redis', () => closeRedis(redis));
  const bullmq = createRedis(target, { forBullmq: true, name: 'worker-bullmq', onError: throttledErrorLog(logger, 'redis error (queue connection)') });
  closers.defer('queue redis', () => closeRedis(bullmq));
  const eviction = await checkEvictionPolicy(redis);
  if (!eviction.ok) {
    logger.error(
      { maxmemoryPolicy: eviction.policy },
      'REDIS maxmemory-policy IS NOT noeviction: under memory pressure Redis may evict queued jobs and records, and money is lost. Set maxmemory-policy noeviction.',
    );
  }

  const common = { connection: bullmq, settings: { backoffStrategy } };
  let registry = config.registry;
  const homeId = homeWalletId(registry);
  // Every worker consumes every wallet's and every shard's queues; the concurrency and the retry
  // rate are shared out over them, so N lanes do not multiply what one worker may send at once.
  // Read when a Worker is made: a reload that adds wallets makes the next lanes' shares smaller.
  const perLane = (total: number): number => Math.max(1, Math.ceil(total / (registry.wallets.length * config.redisShards)));
  const watched = (worker: Worker, log: Logger = logger): Worker => {
    worker.on('error', throttledErrorLog(log.child({ queue: worker.name }), 'worker error'));
    // A run that threw: a retry to come (RetryLater) is routine, the last one is not.
    worker.on('failed', (job, err) => {
      const last = job === undefined || job.attemptsMade >= (job.opts.attempts ?? 1);
      log[last ? 'warn' : 'debug']({ queue: worker.name, job_id: job?.id, ...subjectOfJobId(job?.id ?? ''), attempts_made: job?.attemptsMade, reason: err.message }, last ? 'job failed for good' : 'job to run again');
    });
    worker.on('stalled', (jobId) => log.warn({ queue: worker.name, job_id: jobId, ...subjectOfJobId(jobId) }, STALLED_LINE));
    return worker;
  };

  /**
   * One wallet's background work: its stores, queues, client and breaker, and the workers on its
   * queues, with closers of its own (a reload opens and closes lanes while the worker runs). Its
   * close: the workers (the jobs in hand finish), then its cap, breaker and client; its queues are
   * closed after it when the wallet leaves (`retire`).
   */
  const queuesOf = new Map<string, Queues>();
  const openWalletLane = (entry: WalletEntry, injected: WalletClient | undefined) => {
    const own = createClosers((step, err) => logger.error({ err, step, wallet: entry.id }, 'worker close step failed'));
    const layout = walletLayout(config, entry.id);
    // Its wallet series carry its `wallet` label.
    const laneMetrics = walletMetrics(metrics, entry.id);
    // Every line about this wallet's records, jobs and calls names it.
    const laneLogger = logger.child({ wallet: entry.id });
    const rules = walletRules(entry);
    // The wallet's breaker state lives in its own shard 0, shared with the gateways.
    const { wallet, breaker, cap } = openGuardedWallet({
      settings: entry.client,
      walletId: entry.id,
      maxInFlight: entry.maxInFlight,
      redis,
      keys: layout.keys(0),
      logger: laneLogger,
      metrics: laneMetrics,
      wallet: injected,
      now,
      observeCalls: false,
    });
    own.defer(`wallet client ${entry.id}`, () => wallet.close());
    own.defer(`wallet breaker ${entry.id}`, () => breaker.close());
    own.defer(`wallet in-flight cap ${entry.id}`, () => cap.close());
    const store = createTransactionStore(redis, layout, config.RECORD_RETENTION_SECONDS, now, config.DATABASE_URL !== undefined);
    // Records and token state are written on the store's connection; BullMQ's jobs are not what a send rests on.
    const durability = durabilityFor(config, [redis], layout);
    // The worker never creates or renews sessions; it ends them with their token's terminate.
    const sessions = createSessionStore(redis, layout, config.RECORD_RETENTION_SECONDS);
    // Its queues depend on the key layout alone: a lane reopened for a changed wallet keeps them.
    const queues = queuesOf.get(entry.id) ?? createQueues(bullmq, layout, throttledErrorLog(laneLogger, 'queue error'));
    queuesOf.set(entry.id, queues);
    const locks = lockSettings(rules.WALLET_TIMEOUT_MS);
    const timings = retryTimings({ ...config, ...rules });
    const upkeep: UpkeepDeps = {
      store,
      sessions,
      queues,
      wallet,
      logger: laneLogger,
      metrics: laneMetrics,
      graceMs: timings.graceMs,
      deadCheckWindowMs: config.DEAD_CHECK_WINDOW_MS,
      deadCheckIntervalMs: config.DEAD_CHECK_INTERVAL_MS,
      providerId: rules.PROVIDER_ID,
      breaker,
      now,
    };
    const retryProcessorOf = (shard: number) => createRetryProcessor({
      store,
      ensureRetryJob: (record) => ensureRetryJob(queues, record, 0),
      shard,
      wallet,
      breaker,
      cap,
      durability,
      // BullMQ's own way to hold a whole queue back: the job goes back to wait, no attempt used.
      rateLimit: (ms) => queues.shards[shard]!.retry.rateLimit(ms),
      logger: laneLogger,
      metrics: laneMetrics,
      ...timings,
      now,
    });
    const processTerminate = createTerminateProcessor({
      sessions,
      wallet,
      breaker,
      durability,
      shardOfToken: (tokenRef) => layout.shardOfId(tokenRef) ?? 0,
      logger: laneLogger,
      providerId: rules.PROVIDER_ID,
      unit: rules.RETRY_DELAY_UNIT,
      recheckMs: HELD_RECHECK_MS,
      leaseMs: locks.lockDuration,
      graceMs: timings.graceMs,
      windowMs: config.DEAD_CHECK_WINDOW_MS,
      retentionSeconds: config.RECORD_RETENTION_SECONDS,
      now,
    });
    const slots: WorkerSlot[] = layout.all.flatMap((shard) => {
      const prefix = layout.queuePrefix(shard);
      return [
        {
          queue: queues.shards[shard]!.retry,
          // The retry processor holds its queue back (queue.rateLimit) while the breaker is not closed.
          heldBack: () => !breaker.allowsCalls(),
          make: () =>
            watched(
              new Worker<RetryJobData>(QUEUE_NAMES.retry, tracedProcessor(QUEUE_NAMES.retry, retryProcessorOf(shard)), {
                ...common,
                ...locks,
                prefix,
                concurrency: perLane(config.WORKER_CONCURRENCY),
                // The ceiling a backlog drains at after an outage, over all workers (0: none).
                ...(config.WALLET_RETRY_RATE > 0 ? { limiter: { max: perLane(config.WALLET_RETRY_RATE), duration: 1000 } } : {}),
              }),
              laneLogger,
            ),
        },
        {
          queue: queues.shards[shard]!.terminate,
          make: () => watched(new Worker<TerminateJobData>(QUEUE_NAMES.terminate, tracedProcessor(QUEUE_NAMES.terminate, processTerminate), { ...common, ...locks, prefix, concurrency: perLane(10) }), laneLogger),
        },
      ];
    });
    const workers = startFetchWatchdog(slots, { intervalMs: FETCH_WATCHDOG_MS, logger: laneLogger });
    // Graceful: the jobs in hand finish, no new one starts.
    own.defer(`workers ${entry.id}`, () => workers.close());
    /** Takes the share of the concurrency now (a reload changed the number of lanes). */
    const reshare = (): void => {
      for (const worker of workers.workers()) worker.concurrency = perLane(worker.name === QUEUE_NAMES.retry ? config.WORKER_CONCURRENCY : 10);
    };
    return { entry, layout, durability, queues, upkeep, locks, reshare, deadCheckCursor: { from: 0 } as DeadCheckCursor, close: () => own.closeAll() };
  };
  type Lane = ReturnType<typeof openWalletLane>;
  // Live: a reload adds, replaces and drops lanes; the upkeep reads them at each run.
  const walletLanes = new Map<string, Lane>();
  const retiring = new Set<Promise<void>>();
  const retire = (lane: Lane, removed: boolean): void => {
    const queues = removed ? queuesOf.get(lane.entry.id) : undefined;
    if (removed) queuesOf.delete(lane.entry.id);
    const closing = (async () => {
      await lane.close().catch(() => undefined);
      await queues?.close().catch((err: unknown) => logger.error({ err, step: `queues ${lane.entry.id}` }, 'worker close step failed'));
    })();
    retiring.add(closing);
    void closing.finally(() => retiring.delete(closing));
  };
  closers.defer('wallet lanes', async () => {
    for (const lane of walletLanes.values()) retire(lane, true);
    walletLanes.clear();
    await Promise.all([...retiring]);
  });
  for (const entry of registry.wallets) walletLanes.set(entry.id, openWalletLane(entry, entry.id === homeId ? deps.wallet : undefined));
  const home = walletLanes.get(homeId)!;
  // The outboxes of the wallets the registry holds now: a wallet a reload adds is drained from then on.
  const ledger = openLedger(
    config,
    redis,
    () =>
      [...walletLanes.values()].flatMap((lane) =>
        lane.layout.all.map((shard) => ({ wallet: lane.entry.id, shard, key: lane.layout.keys(shard).ledgerOutbox(), replicated: () => lane.durability.confirmRead(shard) })),
      ),
    logger,
    closers,
    now,
  );
  const queues = home.queues;

  const sweepAll = async (signal?: AbortSignal): Promise<number> => {
    let examined = 0;
    for (const lane of [...walletLanes.values()]) examined += (await sweep(lane.upkeep, signal)).examined;
    return examined;
  };
  const deadCheckAll = async (): Promise<number> => {
    let checked = 0;
    for (const lane of [...walletLanes.values()]) checked += await deadCheck(lane.upkeep, lane.deadCheckCursor);
    return checked;
  };
  const slots: WorkerSlot[] = [
    {
      queue: queues.upkeep,
      make: () =>
        watched(
          new Worker(
            QUEUE_NAMES.upkeep,
            async (job: Job) => (job.name === UPKEEP_JOBS.deadCheck ? deadCheckAll() : sweepAll()),
            { ...common, ...home.locks, prefix: home.layout.queuePrefix(0), concurrency: 1 },
          ),
        ),
    },
  ];
  const workers = startFetchWatchdog(slots, { intervalMs: FETCH_WATCHDOG_MS, logger });
  // Graceful: the jobs in hand finish, no new one starts.
  closers.defer('upkeep worker', () => workers.close());

  await queues.upkeep.upsertJobScheduler(UPKEEP_JOBS.sweep, { every: config.SWEEP_INTERVAL_MS }, { name: UPKEEP_JOBS.sweep });
  await queues.upkeep.upsertJobScheduler(UPKEEP_JOBS.deadCheck, { every: config.DEAD_CHECK_INTERVAL_MS }, { name: UPKEEP_JOBS.deadCheck });

  async function sweepNow(signal?: AbortSignal): Promise<void> {
    try {
      await sweepAll(signal);
    } catch (err) {
      logger.error({ err }, 'sweep failed');
    }
  }
  // Work a crashed process left behind is picked up at once, not only at the next interval. In the
  // background: with a backlog it reads up to a thousand records while the jobs already run, and
  // neither the start nor a stop has to wait for all of it.
  const stopFirstSweep = new AbortController();
  const firstSweep = sweepNow(stopFirstSweep.signal);
  closers.defer('first sweep', () => {
    stopFirstSweep.abort();
    return firstSweep;
  });
  const reloader = createReloader({
    readRegistry: config.readRegistry,
    current: () => registry,
    redis,
    layoutOf: (walletId) => walletLayout(config, walletId),
    async apply(plan) {
      for (const entry of plan.removed) {
        retire(walletLanes.get(entry.id)!, true);
        walletLanes.delete(entry.id);
      }
      // Before any lane opens: a new lane's concurrency is its share of the new registry's wallets (perLane).
      registry = plan.next;
      for (const entry of plan.changed) {
        // The new lane takes the next jobs; the old one finishes the jobs in hand, then closes.
        const old = walletLanes.get(entry.id)!;
        walletLanes.set(entry.id, openWalletLane(entry, undefined));
        retire(old, false);
      }
      for (const entry of plan.added) walletLanes.set(entry.id, openWalletLane(entry, undefined));
      for (const lane of walletLanes.values()) lane.reshare();
      logger.info({ wallets: registry.wallets.map((w) => w.id), ...planSummary(plan) }, 'registry reloaded');
    },
  });
  const bus = await startReloadBus({ redis, prefix: config.QUEUE_PREFIX, self: processId('worker'), reload: () => reloader.reload(), logger });
  closers.defer('reload subscription', async () => {
    await bus.close();
    // A SIGHUP's reload under way ends before the wallets close.
    await reloader.idle();
  });
  logger.info(
    { prefix: config.QUEUE_PREFIX, wallets: registry.wallets.map((w) => w.id), shards: config.redisShards, concurrency: config.WORKER_CONCURRENCY, metricsUrl: metricsServer?.url, ...home.locks },
    'worker started',
  );

  let closing: Promise<void> | undefined;
  return {
    queues,
    get walletQueues() {
      return new Map([...walletLanes].map(([id, lane]) => [id, lane.queues]));
    },
    metrics,
    metricsUrl: metricsServer?.url,
    sweepNow: () => sweepNow(),
    deadCheckNow: deadCheckAll,
    ledger,
    reload: () => reloader.reload(),
    close() {
      closing ??= closers.closeAll().then(() => {
        logger.info('worker stopped');
      });
      return closing;
    },
  };
}

/**
 * The ledger's writer when DATABASE_URL is set: migrations first (retried while PostgreSQL is away,
 * the rest of the worker runs meanwhile), then the outboxes drained. Without it the worker keeps
 * no ledger and says so.
 */
function openLedger(
  config: WorkerConfig,
  redis: Parameters<typeof startLedgerDrain>[0]['redis'],
  sources: Parameters<typeof startLedgerDrain>[0]['sources'],
  logger: Logger,
  closers: Closers,
  now: () => number,
): LedgerDrain | undefined {
  if (config.DATABASE_URL === undefined) {
    logger.warn('no ledger: DATABASE_URL is unset, so history is kept in Redis only, for RECORD_RETENTION_SECONDS');
    return undefined;
  }
  const db = openLedgerDb(config.DATABASE_URL);
  closers.defer('ledger database', () => db.end());
  const drain = startLedgerDrain({ redis, db, sources, retentionDays: config.LEDGER_RETENTION_DAYS, claimIdleMs: config.LEDGER_CLAIM_IDLE_MS, logger: logger.child({ component: 'ledger' }), now });
  closers.defer('ledger drain', () => drain.close());
  return drain;
}
