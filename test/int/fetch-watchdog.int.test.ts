import { Writable } from 'node:stream';
import { Queue, Worker } from 'bullmq';
import type Redis from 'ioredis';
import { waitFor } from '../../src/lib/wait-for';
import { createLogger } from '../../src/observability/logger';
import { closeRedis, createRedis } from '../../src/store/redis';
import { startFetchWatchdog, type FetchWatchdog } from '../../workers/fetch-watchdog';
import { deletePrefix, redisUrl, testPrefix } from '../support/prefix';

/**
 * The watchdog against real BullMQ: a paused Worker stands in for the one whose blocking connection
 * stopped after a failover (it fetches nothing, and so never moves a delayed job to wait).
 */
const prefix = testPrefix('watchdog');
const lines: string[] = [];
const logger = createLogger({ level: 'warn', name: 't', destination: new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString('utf8')), cb()) }) });
let connection: Redis;
let queue: Queue;
let watchdog: FetchWatchdog | undefined;
const made: Worker[] = [];

beforeAll(() => {
  connection = createRedis(redisUrl(), { forBullmq: true });
  queue = new Queue('q', { connection, prefix });
});

afterAll(async () => {
  await watchdog?.close();
  // The replaced Worker too: the watchdog closes it without waiting.
  await Promise.all(made.map((w) => w.close()));
  await queue.close();
  await closeRedis(connection);
  await deletePrefix(prefix);
});

it("replaces a Worker that fetches nothing while its queue's only work is a delayed job past its time, and the new Worker runs it", async () => {
  const ran: string[] = [];
  const make = (): Worker => {
    const worker = new Worker('q', async (job) => void ran.push(job.id ?? ''), { connection, prefix });
    made.push(worker);
    return worker;
  };
  watchdog = startFetchWatchdog([{ queue, make }], { intervalMs: 250, logger });
  await made[0]!.waitUntilReady();
  await made[0]!.pause(true);
  await queue.add('retry', {}, { jobId: 'delayed-retry', delay: 50 });

  await waitFor('the delayed job run by a new Worker', () => ran.includes('delayed-retry'), 15_000, { intervalMs: 20 });
  expect(made.length).toBeGreaterThanOrEqual(2);
  expect(await queue.getDelayedCount()).toBe(0);
  const replaced = lines.map((l) => JSON.parse(l) as { msg: string; waiting?: number; overdue?: number }).find((l) => l.msg === 'worker took no due job: replaced');
  expect(replaced).toMatchObject({ waiting: 0, overdue: 1 });
});
