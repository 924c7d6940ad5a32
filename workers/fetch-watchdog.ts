import type { Queue, Worker } from 'bullmq';
import type { Logger } from '../src/observability/logger';

/**
 * A BullMQ Worker whose fetch loop stopped is replaced. On a Redis Cluster the cluster soak saw one
 * after a master failover (seed 303): a retry job moved back to `wait` by the stalled check sat
 * there for over a minute, and neither worker process's Worker of that shard's queue took it, while
 * the same processes went on running the stalled checks and other shards' jobs. (Not reproduced
 * with BullMQ and the ioredis Cluster alone; the Worker's blocking connection is the suspect.) The
 * sweeper cannot help: the job is live, so it leaves it to the queue.
 *
 * Every `intervalMs` each slot is looked at: a Worker that started no job since the last look while
 * its queue holds waiting jobs gets a strike; two in a row and a new one is made in its place. The
 * old one is closed gracefully (it takes no new job; the jobs in hand finish and keep their locks)
 * and not awaited: a stuck fetch loop may never finish closing. Not while `mayRun()` says no (the
 * wallet circuit breaker holds the retry queues back on purpose). A queue read that has no answer
 * within `intervalMs` is given up for that look (no strike: Redis may just be failing over), so one
 * wedged connection never stops the looks at the other slots.
 */
export interface WorkerSlot {
  readonly queue: Pick<Queue, 'getWaitingCount' | 'name'>;
  /** Makes the slot's Worker (with its event listeners). */
  readonly make: () => Worker;
}

export interface FetchWatchdog {
  /** The slots' Workers now. */
  workers(): readonly Worker[];
  /** Stops looking and closes the Workers (gracefully: the jobs in hand finish). */
  close(): Promise<void>;
}

const STRIKES = 2;

export function startFetchWatchdog(slots: readonly WorkerSlot[], options: { intervalMs: number; mayRun: () => boolean; logger: Logger }): FetchWatchdog {
  const state = slots.map((slot) => {
    const s = { slot, worker: slot.make(), started: 0, seen: 0, strikes: 0 };
    s.worker.on('active', () => (s.started += 1));
    return s;
  });
  let looking: Promise<void> | undefined;

  async function look(): Promise<void> {
    for (const s of state) {
      const moved = s.started !== s.seen;
      s.seen = s.started;
      if (moved || !options.mayRun() || ((await waitingWithin(s.slot.queue, options.intervalMs)) ?? 0) === 0) {
        s.strikes = 0;
        continue;
      }
      s.strikes += 1;
      if (s.strikes < STRIKES) continue;
      options.logger.warn({ queue: s.slot.queue.name, waited_ms: STRIKES * options.intervalMs }, 'worker took no waiting job: replaced');
      const old = s.worker;
      void old.close().catch(() => undefined);
      s.worker = s.slot.make();
      s.worker.on('active', () => (s.started += 1));
      s.strikes = 0;
    }
  }

  /** The queue's waiting count, or undefined when the read has no answer in time. */
  async function waitingWithin(queue: WorkerSlot['queue'], ms: number): Promise<number | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)));
    const read = queue.getWaitingCount();
    read.catch(() => undefined);
    try {
      const waiting = await Promise.race([read, late]);
      if (waiting === undefined) options.logger.warn({ queue: queue.name, waited_ms: ms }, 'worker watchdog: the queue read had no answer in time');
      return waiting;
    } finally {
      clearTimeout(timer);
    }
  }

  const timer = setInterval(() => {
    looking ??= look()
      .catch((err: unknown) => options.logger.warn({ err }, 'worker watchdog: reading the queues failed'))
      .finally(() => {
        looking = undefined;
      });
  }, options.intervalMs);
  timer.unref();

  return {
    workers: () => state.map((s) => s.worker),
    async close() {
      clearInterval(timer);
      await looking;
      await Promise.all(state.map((s) => s.worker.close()));
    },
  };
}
