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
 * its queue holds due jobs gets a strike; two in a row and a new one is made in its place. Due is
 * waiting, or delayed past its time by more than a look: a live Worker moves a delayed job to wait
 * when its time comes, a stuck one never does, and most of this work waits in the delayed set (a
 * retry's backoff, a held terminate, a watched debit's next re-check, the upkeep's next run). The
 * cluster soak once ended with every shard's remaining work delayed and overdue for a minute, and
 * no strike, while the watchdog counted waiting jobs only. The
 * old one is closed gracefully (it takes no new job; the jobs in hand finish and keep their locks)
 * and not awaited: a stuck fetch loop may never finish closing. Not while the slot's `heldBack()`
 * says its queue is held back on purpose (the wallet circuit breaker holds the retry queues back:
 * no job starts there by design; the terminate and upkeep jobs still start, and a held terminate
 * delays itself). A queue read that has no answer
 * within `intervalMs` is given up for that look (no strike: Redis may just be failing over), so one
 * wedged connection never stops the looks at the other slots.
 */
export interface WorkerSlot {
  readonly queue: Pick<Queue, 'getWaitingCount' | 'getDelayedCount' | 'name'>;
  /** Makes the slot's Worker (with its event listeners). */
  readonly make: () => Worker;
  /** True while the queue is held back on purpose, so that no job starting is no strike. */
  readonly heldBack?: () => boolean;
}

export interface FetchWatchdog {
  /** The slots' Workers now. */
  workers(): readonly Worker[];
  /** Stops looking and closes the Workers (gracefully: the jobs in hand finish). */
  close(): Promise<void>;
}

const STRIKES = 2;

/** A queue's jobs a fetching Worker would have started by now. */
interface Due {
  readonly waiting: number;
  readonly overdue: number;
}

export interface FetchWatchdogOptions {
  readonly intervalMs: number;
  readonly logger: Logger;
  readonly now?: () => number;
}

export function startFetchWatchdog(slots: readonly WorkerSlot[], options: FetchWatchdogOptions): FetchWatchdog {
  const now = options.now ?? Date.now;
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
      const due = moved || s.slot.heldBack?.() === true ? undefined : await dueWithin(s.slot.queue, options.intervalMs);
      if (due === undefined || due.waiting + due.overdue === 0) {
        s.strikes = 0;
        continue;
      }
      s.strikes += 1;
      if (s.strikes < STRIKES) continue;
      options.logger.warn({ queue: s.slot.queue.name, waited_ms: STRIKES * options.intervalMs, ...due }, 'worker took no due job: replaced');
      const old = s.worker;
      void old.close().catch(() => undefined);
      s.worker = s.slot.make();
      s.worker.on('active', () => (s.started += 1));
      s.strikes = 0;
    }
  }

  /** The queue's due jobs (waiting; delayed past their time by more than `ms`), or undefined when the read has no answer in time. */
  async function dueWithin(queue: WorkerSlot['queue'], ms: number): Promise<Due | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)));
    const read = Promise.all([queue.getWaitingCount(), queue.getDelayedCount(Math.floor(now() - ms))]).then(([waiting, overdue]): Due => ({ waiting, overdue }));
    read.catch(() => undefined);
    try {
      const due = await Promise.race([read, late]);
      if (due === undefined) options.logger.warn({ queue: queue.name, waited_ms: ms }, 'worker watchdog: the queue read had no answer in time');
      return due;
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
