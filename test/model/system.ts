import type { Job } from 'bullmq';
import type { Scheduler } from 'fast-check';
import { loadGatewayConfig, loadWorkerConfig } from '../../src/config/env';
import { walletRules } from '../../src/config/registry';
import { recheckAction, redriveAction, resolveAction, type ActionDeps, type ActionResult } from '../../src/console/actions';
import { LEASE_MARGIN_MS } from '../../src/duties/settlement';
import { createQueues, ensureRetryJob, ensureTerminateJob, type Queues, type RetryJobData, type TerminateJobData } from '../../src/duties/queues';
import type { Duties } from '../../src/duties/types';
import { createEngine, type Engine } from '../../src/engine';
import { createLogger } from '../../src/observability/logger';
import { createMetrics } from '../../src/observability/metrics';
import { createAuditTrail } from '../../src/store/audit';
import { PRIMARY_ONLY } from '../../src/store/durability';
import type { RedisClient } from '../../src/store/redis';
import { createSessionStore } from '../../src/store/sessions';
import { shardLayoutFor } from '../../src/store/shards';
import { createTransactionStore, type TransactionStore } from '../../src/store/transactions';
import type { Resolution, TransactionRecord } from '../../src/store/types';
import { RetryLater } from '../../workers/backoff';
import { createRetryProcessor } from '../../workers/retry-processor';
import { createTerminateProcessor } from '../../workers/terminate-processor';
import { deadCheck, sweep, type DeadCheckCursor, type UpkeepDeps } from '../../workers/upkeep';
import { HELD_RECHECK_MS, lockSettings, retryTimings } from '../../workers/worker';
import { deletePrefix, testPrefix } from '../support/prefix';
import { ScriptedWallet, tasks, type Task } from './scripted-wallet';
import { UNCAPPED } from '../support/uncapped';

/**
 * The real parts the model drives, in this process: the gateway's use cases (createEngine over the
 * real session and transaction stores and BullMQ queues), the worker's retry and terminate
 * processors, the sweeper and dead-check, and the console's operator actions, all on a real Redis
 * under a prefix of their own, all on one clock the model moves. Only the wallet is scripted
 * (scripted-wallet.ts) and the breaker is held closed: its outage rules have their own tests, and an
 * open breaker would only refuse calls the model wants to see raced.
 *
 * Every call the model makes runs as a Task; between commands the system is quiet: each task is
 * finished or holds a call at the wallet (settle()).
 */
export const PROVIDER_ID = '42';
export const START_BALANCE = '1000.00';
/** Longer than any generated run's time moves; the drain passes it once. */
export const DEAD_CHECK_WINDOW_MS = 3600 * 1000;
const ALWAYS_CLOSED = {
  allowsCalls: () => true,
  // A health check passed after every failure: no retry waits for the breaker's verdict.
  healthOkAt: () => Number.MAX_SAFE_INTEGER,
  refused: () => undefined,
  gate: () => Promise.resolve({ kind: 'go' as const }),
  trialDone: () => Promise.resolve(),
  trialUnused: () => Promise.resolve(),
};

/** The wallet deadline: moving the clock past it times out every call still held. */
export const WALLET_TIMEOUT_MS = 1000;
/** The worker's job lock (and a run's in-flight mark). */
export const JOB_LOCK_MS = lockSettings(WALLET_TIMEOUT_MS).lockDuration;

export interface JobRef {
  readonly queue: 'retry' | 'terminate';
  readonly id: string;
  readonly job: Job;
}

export interface System {
  readonly wallet: ScriptedWallet;
  readonly engine: Engine;
  readonly store: TransactionStore;
  readonly tasks: Task[];
  now(): number;
  /** Moves the clock; past the wallet deadline, every held call's caller gives up. */
  advance(ms: number): void;
  /** Starts `work` as a task; the command's settle() waits until it finished or holds a wallet call. */
  start(label: string, work: () => Promise<unknown>, options?: { job?: string; prompt?: boolean }): Task;
  /** Until every live task finished or holds a call at the wallet. */
  settle(): Promise<void>;
  /** The scheduler lets the wallet take one held call; false when none is held. */
  release(): Promise<boolean>;
  /** Jobs waiting or delayed in the retry and terminate queues. */
  jobs(): Promise<JobRef[]>;
  /** One run of a job, as a worker would make it; false when a live run of it holds it already. */
  runJob(ref: JobRef): boolean;
  sweep(): void;
  deadCheck(): void;
  /** The console's actions, each a task (a re-check asks the wallet); `done` gets the result. */
  redrive(id: string, done: (result: ActionResult) => void): void;
  recheck(id: string, done: (result: ActionResult) => void): void;
  resolve(id: string, resolution: Resolution, done: (result: ActionResult) => void): void;
  records(): Promise<TransactionRecord[]>;
  /** Errors thrown by tasks that no expected outcome explains. */
  readonly crashes: string[];
  close(): Promise<void>;
}

export interface Connections {
  readonly redis: RedisClient;
  readonly bullmq: RedisClient;
}

const silent = createLogger({ level: 'silent', name: 'money-model' });

export async function openSystem(connections: Connections, scheduler: Scheduler): Promise<System> {
  const prefix = testPrefix('model');
  const env = {
    REDIS_URL: 'redis://unused',
    QUEUE_PREFIX: prefix,
    WALLET_BASE_URL: 'http://wallet.invalid',
    WALLET_BASIC_USER: 'u',
    WALLET_BASIC_PASSWORD: 'p',
    WALLET_SIGNING_SECRET: 's',
    WALLET_TIMEOUT_MS: String(WALLET_TIMEOUT_MS),
    PROVIDER_ID,
    ENGINE_API_KEY: 'model-engine-key',
    RETRY_DELAY_UNIT: 'ms',
    DEAD_CHECK_INTERVAL_MS: '1000',
    DEAD_CHECK_WINDOW_MS: String(DEAD_CHECK_WINDOW_MS),
    LOG_LEVEL: 'silent',
    PORT: '0',
  };
  // The one wallet's rules under the single-wallet names.
  const loadedGateway = loadGatewayConfig(env);
  const gatewayConfig = { ...loadedGateway, ...walletRules(loadedGateway.registry.wallets[0]!) };
  const loadedWorker = loadWorkerConfig(env);
  const workerConfig = { ...loadedWorker, ...walletRules(loadedWorker.registry.wallets[0]!) };
  let clock = Date.now();
  const now = (): number => clock;
  const { redis, bullmq } = connections;
  const layout = shardLayoutFor(gatewayConfig);
  const store = createTransactionStore(redis, layout, gatewayConfig.RECORD_RETENTION_SECONDS, now);
  const sessions = createSessionStore(redis, layout, gatewayConfig.SESSION_TTL_SECONDS, undefined, now);
  const queues: Queues = createQueues(bullmq, layout);
  const wallet = new ScriptedWallet(scheduler, START_BALANCE);
  const metrics = createMetrics({ defaultMetrics: false });
  const duties: Duties = {
    enqueueRetry: async (record, delayMs) => {
      await ensureRetryJob(queues, record, delayMs);
    },
    enqueueTerminate: async (tokenRef) => {
      await ensureTerminateJob(queues, tokenRef);
    },
    close: () => Promise.resolve(),
  };
  const engine = createEngine({ wallet, sessions, transactions: store, duties, durability: PRIMARY_ONLY, config: gatewayConfig, clock: now, logger: silent, breaker: ALWAYS_CLOSED, cap: UNCAPPED });
  const locks = lockSettings(workerConfig.WALLET_TIMEOUT_MS);
  const { graceMs } = retryTimings(workerConfig);
  const processRetry = createRetryProcessor({
    store,
    ensureRetryJob: (record) => ensureRetryJob(queues, record, 0),
    shard: 0,
    wallet,
    breaker: ALWAYS_CLOSED,
    cap: UNCAPPED,
    durability: PRIMARY_ONLY,
    rateLimit: () => Promise.resolve(),
    logger: silent,
    metrics,
    ...retryTimings(workerConfig),
    now,
  });
  const processTerminate = createTerminateProcessor({
    sessions,
    wallet,
    breaker: ALWAYS_CLOSED,
    durability: PRIMARY_ONLY,
    shardOfToken: () => 0,
    logger: silent,
    providerId: PROVIDER_ID,
    unit: workerConfig.RETRY_DELAY_UNIT,
    recheckMs: HELD_RECHECK_MS,
    leaseMs: locks.lockDuration,
    graceMs,
    windowMs: workerConfig.DEAD_CHECK_WINDOW_MS,
    retentionSeconds: workerConfig.RECORD_RETENTION_SECONDS,
    now,
  });
  const upkeep: UpkeepDeps = {
    store,
    sessions,
    queues,
    wallet,
    logger: silent,
    metrics,
    graceMs,
    deadCheckWindowMs: workerConfig.DEAD_CHECK_WINDOW_MS,
    deadCheckIntervalMs: workerConfig.DEAD_CHECK_INTERVAL_MS,
    providerId: PROVIDER_ID,
    breaker: ALWAYS_CLOSED,
    now,
  };
  const cursor: DeadCheckCursor = { from: 0 };
  const actions: ActionDeps = {
    store,
    sessions,
    queues,
    audit: createAuditTrail(redis, layout),
    wallet,
    providerId: PROVIDER_ID,
    compensationLeaseMs: gatewayConfig.WALLET_TIMEOUT_MS + LEASE_MARGIN_MS,
    now,
  };
  const actor = { user: 'model-operator', note: 'checked at the wallet', requestId: 'model' };

  const all: Task[] = [];
  const crashes: string[] = [];
  const activeRuns = new Map<string, Task>();

  function start(label: string, work: () => Promise<unknown>, options: { job?: string; prompt?: boolean } = {}): Task {
    const task: Task = { label, held: 0, done: false, killed: false, stalled: false, prompt: options.prompt ?? false, ...(options.job === undefined ? {} : { job: options.job }) };
    all.push(task);
    void tasks.run(task, async () => {
      try {
        await work();
      } catch (err) {
        crashes.push(`${label}: ${(err as Error).stack ?? String(err)}`);
      } finally {
        task.done = true;
      }
    });
    return task;
  }

  async function settle(): Promise<void> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      // Quiet twice in a row: a task answered by the wallet may not have resumed yet.
      if (quiet()) {
        await new Promise((r) => setImmediate(r));
        if (quiet()) return;
      }
      if (Date.now() > deadline) throw new Error(`the system did not settle: ${all.filter((t) => !t.done && !t.killed && t.held === 0).map((t) => t.label).join(', ')}`);
      await new Promise((r) => setTimeout(r, 1));
    }
  }
  const quiet = (): boolean => all.every((t) => t.done || t.killed || t.held > 0);

  async function jobs(): Promise<JobRef[]> {
    const states = ['waiting', 'delayed', 'prioritized'] as const;
    const shard = queues.shards[0]!;
    const retry = (await shard.retry.getJobs([...states])).map((job) => ({ queue: 'retry' as const, id: job.id!, job: job as Job }));
    const terminate = (await shard.terminate.getJobs([...states])).map((job) => ({ queue: 'terminate' as const, id: job.id!, job: job as Job }));
    return [...retry, ...terminate].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  function runJob(ref: JobRef): boolean {
    const running = activeRuns.get(ref.id);
    if (running !== undefined && !running.done && !running.killed && !running.stalled) return false;
    const task = start(`${ref.queue} job ${ref.id}`, async () => {
      try {
        if (ref.queue === 'retry') await processRetry(ref.job as Job<RetryJobData>, undefined);
        else await processTerminate(ref.job as Job<TerminateJobData>, undefined);
      } catch (err) {
        // A wait or a retry to come: the job stays queued, as BullMQ's delayed set keeps it.
        if (err instanceof RetryLater) return;
        // UnrecoverableError: the job ends failed (dead or refused); a stale run may meet it gone.
        if ((err as Error).name !== 'UnrecoverableError') throw err;
      }
      // Completed or failed for good: the job is gone, as removeOnComplete and ensureJob make it.
      await ref.job.remove().catch(() => undefined);
    }, { job: ref.id });
    activeRuns.set(ref.id, task);
    return true;
  }

  async function records(): Promise<TransactionRecord[]> {
    const keys = await redis.keys(`${prefix}:*`);
    const ids = new Set<string>();
    for (const key of keys) {
      const match = /:tx:(.+)$/.exec(key);
      if (match) ids.add(match[1]!);
    }
    const found = await Promise.all([...ids].map((id) => store.get(id)));
    return found.filter((r): r is TransactionRecord => r !== undefined);
  }

  return {
    wallet,
    engine,
    store,
    tasks: all,
    crashes,
    now,
    advance(ms) {
      clock += ms;
      if (ms >= WALLET_TIMEOUT_MS) wallet.expireHeld();
    },
    start,
    settle,
    async release() {
      if (scheduler.count() === 0) return false;
      await scheduler.waitNext(1);
      return true;
    },
    jobs,
    runJob,
    sweep: () => void start('sweep', () => sweep(upkeep)),
    deadCheck: () => void start('dead-check', () => deadCheck(upkeep, cursor)),
    redrive: (id, done) => void start(`redrive ${id}`, async () => done(await redriveAction(actions, id, actor))),
    recheck: (id, done) => void start(`recheck ${id}`, async () => done(await recheckAction(actions, id, actor))),
    resolve: (id, resolution, done) => void start(`resolve ${id} ${resolution}`, async () => done(await resolveAction(actions, id, resolution, actor))),
    records,
    async close() {
      await queues.close();
      await deletePrefix(prefix);
    },
  };
}
