import { Queue, type Job, type JobsOptions } from 'bullmq';
import { ATTR, SpanKind, carrierOf, contextOf, inSpan, tracingOn, type TraceCarrier } from '../lib/tracing';
import type { RedisClient } from '../store/redis';
import type { ShardLayout } from '../store/shards';
import type { ShardRef } from '../store/transactions';
import { MAX_RETRIES } from './retry-policy';
import type { Duties } from './types';

/**
 * The background queues (BullMQ 6 on ioredis). Each shard (src/store/shards.ts) has its own retry
 * and terminate queue under the shard's prefix, its hash tag: a queue's keys stay in one slot, the
 * shard of the records its jobs drive, and the queues spread over the masters as the records do.
 * Every worker consumes every shard's queues. The upkeep queue (the schedulers) is shard 0's.
 * Job data holds ids only (and the trace context, ids too): Bull Board shows job data, and the
 * token and body stay in the record.
 */
export const QUEUE_NAMES = {
  /** Credit/rollback retries and debit compensations: one job per transaction id. */
  retry: 'wallet-retry',
  /** Terminate of a wallet token once its sessions ended and its work settled: one job per token. */
  terminate: 'session-terminate',
  /** The sweeper and the dead-check, run by job schedulers. */
  upkeep: 'upkeep',
} as const;

/** Name of the custom backoff; the worker's settings.backoffStrategy answers it (workers/backoff.ts). */
export const BACKOFF_TYPE = 'wallet-spec';

export const UPKEEP_JOBS = { sweep: 'sweep', deadCheck: 'dead-check' } as const;

/**
 * The trace context of the request (or job) that created a job, W3C traceparent/tracestate, so the
 * job's runs continue that trace (contract 13). Our own field rather than bullmq-otel: a job is
 * added once under a fixed id (ensureJob) and keeps the context of the request that first needed
 * it; the dead-check reads it back from a dead transaction's failed job; and a process with tracing
 * off adds no field and runs no telemetry hook at all. Absent when the creator was not traced.
 */
export interface TracedJobData {
  readonly trace?: TraceCarrier;
}

export interface RetryJobData extends TracedJobData {
  readonly transactionId: string;
}

export interface TerminateJobData extends TracedJobData {
  readonly tokenRef: string;
}

/** The job data's trace field for the active context: none when it holds no trace. */
function traceField(): TracedJobData {
  const trace = carrierOf();
  return trace === undefined ? {} : { trace };
}

/**
 * BullMQ's control flow, not failures: a run that asks to be delayed, rate-limited or run again
 * later (workers/backoff.ts RetryLater) ends its span without an error status.
 */
const RESCHEDULES = new Set(['DelayedError', 'RateLimitError', 'RetryLater']);

/**
 * A processor whose every run is a consumer span in the trace its job carries, when tracing is on;
 * the processor itself when it is off.
 */
export function tracedProcessor<D extends TracedJobData, R>(queue: string, processor: (job: Job<D>, token?: string) => Promise<R>): (job: Job<D>, token?: string) => Promise<R> {
  if (!tracingOn()) return processor;
  return (job, token) => {
    const subject = subjectOfJobId(job.id ?? '');
    const attributes = {
      [ATTR.queue]: queue,
      [ATTR.job]: job.id ?? '',
      'job.attempts_made': job.attemptsMade,
      ...(subject.transaction_id === undefined ? {} : { [ATTR.transactionId]: subject.transaction_id }),
      ...(subject.token_ref === undefined ? {} : { 'session.token_ref': subject.token_ref }),
    };
    return inSpan(`${queue} ${job.name}`, { kind: SpanKind.CONSUMER, parent: contextOf(job.data.trace), attributes, expected: (err) => err instanceof Error && RESCHEDULES.has(err.name) }, () => processor(job, token));
  };
}

/**
 * The trace a transaction's retry job carried, read back from the job (a dead one is kept failed a
 * week for Bull Board): the dead-check's question about it continues that trace. Undefined with
 * tracing off (no read is made) or once the job is gone.
 */
export async function retryJobTrace(queues: Queues, record: ShardRef): Promise<TraceCarrier | undefined> {
  if (!tracingOn()) return undefined;
  const job = await queues.retryOf(record).getJob(retryJobId(record.transactionId));
  return job?.data.trace;
}

/**
 * BullMQ refuses ':' in a custom id and ids that read as integers; transaction ids may be either,
 * so the id is base64url-encoded behind a fixed prefix.
 */
export function retryJobId(transactionId: string): string {
  return `tx-${Buffer.from(transactionId, 'utf8').toString('base64url')}`;
}

/** What a job id names, for log lines about a job known by its id only (a stalled job). */
export function subjectOfJobId(jobId: string): { transaction_id?: string; token_ref?: string } {
  if (jobId.startsWith('tx-')) return { transaction_id: Buffer.from(jobId.slice(3), 'base64url').toString('utf8') };
  if (jobId.startsWith('end-')) return { token_ref: jobId.slice(4) };
  return {};
}

/** Token refs are already base64url (src/store/sessions.ts tokenRefOf). */
export function terminateJobId(tokenRef: string): string {
  return `end-${tokenRef}`;
}

const WEEK_SECONDS = 7 * 24 * 3600;

/**
 * The record in the store is the retry budget (its history feeds the pure policy); `attempts` is
 * BullMQ's backstop only: 10 retries = 11 runs. A finished job is removed at once so a later job
 * with the same id (a redrive, a sweep) is never swallowed by the jobId dedupe; a failed one stays a
 * week for Bull Board, and redrive/sweep remove it before adding a fresh one.
 */
export const RETRY_JOB_OPTIONS: JobsOptions = Object.freeze({
  attempts: MAX_RETRIES + 1,
  backoff: { type: BACKOFF_TYPE },
  removeOnComplete: true,
  removeOnFail: { age: WEEK_SECONDS },
});

/**
 * Terminate: its waits and retries are moved to the delayed set by the processor itself (they use
 * up no BullMQ attempt), until the terminate's window passes (contract 5.6). `attempts` only
 * bounds runs that end in an unexpected error (Redis away, a bug).
 */
export const TERMINATE_JOB_OPTIONS: JobsOptions = Object.freeze({
  attempts: 1_000,
  backoff: { type: BACKOFF_TYPE },
  removeOnComplete: true,
  removeOnFail: { age: WEEK_SECONDS },
});

export const UPKEEP_JOB_OPTIONS: JobsOptions = Object.freeze({ removeOnComplete: true, removeOnFail: { count: 100 } });

/** One shard's queues. */
export interface ShardQueues {
  readonly retry: Queue<RetryJobData>;
  readonly terminate: Queue<TerminateJobData>;
}

export interface Queues {
  readonly layout: ShardLayout;
  /** Indexed by shard. */
  readonly shards: readonly ShardQueues[];
  readonly upkeep: Queue;
  /** The retry queue of a record's shard (its player's). */
  retryOf(record: Pick<ShardRef, 'playerId' | 'siteId'>): Queue<RetryJobData>;
  /** The terminate queue of a token's shard (its ref names it). */
  terminateOf(tokenRef: string): Queue<TerminateJobData>;
  /** Every queue: the shards' retry queues, their terminate queues, the upkeep queue. */
  readonly all: readonly Queue[];
  close(): Promise<void>;
}

/**
 * The connection must be an ioredis client made with `maxRetriesPerRequest: null`
 * (createRedis(url, { forBullmq: true })). It stays the caller's: close() leaves it open.
 */
export function createQueues(connection: RedisClient, layout: ShardLayout, onError: (err: Error) => void = () => undefined): Queues {
  const shards = layout.all.map((shard) => {
    const options = { connection, prefix: layout.queuePrefix(shard) };
    return {
      retry: new Queue<RetryJobData>(QUEUE_NAMES.retry, { ...options, defaultJobOptions: RETRY_JOB_OPTIONS }),
      terminate: new Queue<TerminateJobData>(QUEUE_NAMES.terminate, { ...options, defaultJobOptions: TERMINATE_JOB_OPTIONS }),
    };
  });
  const upkeep = new Queue(QUEUE_NAMES.upkeep, { connection, prefix: layout.queuePrefix(0), defaultJobOptions: UPKEEP_JOB_OPTIONS });
  const all: Queue[] = [...shards.map((q) => q.retry as Queue), ...shards.map((q) => q.terminate as Queue), upkeep];
  for (const queue of all) {
    // Connection errors also surface on the calls; an unhandled 'error' event would end the process.
    queue.on('error', onError);
  }
  const shardOfToken = (tokenRef: string): number => {
    const shard = layout.shardOfId(tokenRef);
    if (shard === undefined) throw new Error(`token ref names no shard of this layout: ${tokenRef}`);
    return shard;
  };
  return {
    layout,
    shards,
    upkeep,
    all,
    retryOf: (record) => shards[layout.shardOfPlayer(record.playerId, record.siteId)]!.retry,
    terminateOf: (tokenRef) => shards[shardOfToken(tokenRef)]!.terminate,
    async close() {
      await Promise.all(all.map((q) => q.close()));
    },
  };
}

/**
 * Job counts summed state by state: with several shards a queue name comes once per shard, and
 * operators see one number per name (the console's overview, the queue-depth metrics).
 */
export function sumJobCounts(counts: readonly Readonly<Record<string, number>>[]): Record<string, number> {
  const sum: Record<string, number> = {};
  for (const c of counts) for (const [state, n] of Object.entries(c)) sum[state] = (sum[state] ?? 0) + n;
  return sum;
}

const LIVE_STATES = new Set(['waiting', 'delayed', 'active', 'prioritized', 'waiting-children']);

/** Whether a job is waiting, delayed or running for this transaction. */
export async function hasLiveRetryJob(queues: Queues, record: ShardRef): Promise<boolean> {
  return LIVE_STATES.has(await queues.retryOf(record).getJobState(retryJobId(record.transactionId)));
}

/**
 * The one way a job is added under an id that may have been used before: nothing if a job with the
 * id is live (it will read the current state when it runs), else a finished one (completed, or
 * failed and kept for Bull Board) is removed first, because BullMQ's jobId dedupe would silently
 * swallow the new one. Returns whether a job was added.
 */
export async function ensureJob<T>(queue: Queue<T>, name: string, data: T, jobId: string, delayMs = 0): Promise<boolean> {
  const state = await queue.getJobState(jobId);
  if (LIVE_STATES.has(state)) return false;
  if (state === 'completed' || state === 'failed') await queue.remove(jobId);
  // Typed loosely by BullMQ's own generics (name and data are inferred from the queue's parameter).
  await (queue as Queue).add(name, data, { jobId, delay: Math.max(0, delayMs) });
  return true;
}

/** Makes sure a retry job runs for the transaction, in its shard's queue (see ensureJob). */
export function ensureRetryJob(queues: Queues, record: ShardRef, delayMs: number): Promise<boolean> {
  const { transactionId } = record;
  return ensureJob(queues.retryOf(record), 'retry', { transactionId, ...traceField() }, retryJobId(transactionId), delayMs);
}

/** Makes sure a terminate job drives the token, in its shard's queue (see ensureJob). */
export function ensureTerminateJob(queues: Queues, tokenRef: string, delayMs = 0): Promise<boolean> {
  return ensureJob(queues.terminateOf(tokenRef), 'terminate', { tokenRef, ...traceField() }, terminateJobId(tokenRef), delayMs);
}

export interface DutiesOptions {
  /** ioredis client with maxRetriesPerRequest: null; stays the caller's. */
  connection: RedisClient;
  /** The shards (QUEUE_PREFIX and the shard count). */
  layout: ShardLayout;
  /** The queues' 'error' events. */
  onError?: (err: Error) => void;
}

export interface QueueDuties extends Duties {
  readonly queues: Queues;
}

/**
 * The producers the engine uses. Both resolve once the job is in Redis, so the engine answers
 * only after the work is durable; a live job with the same id makes a second call a no-op.
 */
export function createDuties(options: DutiesOptions): QueueDuties {
  const queues = createQueues(options.connection, options.layout, options.onError);
  return {
    queues,
    async enqueueRetry(record, delayMs) {
      await ensureRetryJob(queues, record, delayMs);
    },
    async enqueueTerminate(tokenRef) {
      await ensureTerminateJob(queues, tokenRef);
    },
    close: () => queues.close(),
  };
}
