import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';
import type { Worker } from 'bullmq';
import { waitFor } from '../../src/lib/wait-for';
import { createLogger } from '../../src/observability/logger';
import { startFetchWatchdog } from '../../workers/fetch-watchdog';

/** What the watchdog uses of a BullMQ Worker: its 'active' event and close(). */
class FakeWorker extends EventEmitter {
  closedWith: boolean | undefined;
  close(force = false): Promise<void> {
    this.closedWith = force;
    return Promise.resolve();
  }
}

const lines: string[] = [];
const logger = createLogger({ level: 'warn', name: 't', destination: new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString('utf8')), cb()) }) });

function slot(waiting: () => number) {
  const made: FakeWorker[] = [];
  return {
    made,
    slot: { queue: { name: 'q', getWaitingCount: () => Promise.resolve(waiting()) }, make: () => (made.push(new FakeWorker()), made.at(-1) as unknown as Worker) },
  };
}

it('replaces a Worker that takes no job while its queue holds waiting ones, and closes the old one gracefully', async () => {
  const stuck = slot(() => 2);
  const watchdog = startFetchWatchdog([stuck.slot], { intervalMs: 20, mayRun: () => true, logger });
  await waitFor('a second Worker', () => stuck.made.length >= 2, 5000, { intervalMs: 5 });
  expect(stuck.made[0]!.closedWith).toBe(false);
  expect(watchdog.workers()).toEqual([stuck.made.at(-1)]);
  expect(lines.join('')).toContain('worker took no waiting job: replaced');
  await watchdog.close();
  expect(stuck.made.at(-1)!.closedWith).toBe(false);
});

it('leaves alone a Worker that starts jobs, one with nothing waiting, and all while it may not run', async () => {
  let ticks = 0;
  const busy = slot(() => 2);
  const idle = slot(() => 0);
  const held = slot(() => 2);
  const watchdog = startFetchWatchdog([busy.slot, idle.slot], { intervalMs: 10, mayRun: () => true, logger });
  const heldWatchdog = startFetchWatchdog([held.slot], { intervalMs: 10, mayRun: () => false, logger });
  const activity = setInterval(() => busy.made[0]!.emit('active'), 3);
  // Many looks' worth of time, counted on the idle slot's queue reads.
  const counted = {
    queue: {
      name: 'q',
      getWaitingCount: () => {
        ticks += 1;
        return Promise.resolve(0);
      },
    },
    make: () => new FakeWorker() as unknown as Worker,
  };
  const counter = startFetchWatchdog([counted], { intervalMs: 10, mayRun: () => true, logger });
  await waitFor('ten looks', () => ticks >= 10, 5000, { intervalMs: 5 });
  clearInterval(activity);
  expect([busy.made.length, idle.made.length, held.made.length]).toEqual([1, 1, 1]);
  await Promise.all([watchdog.close(), heldWatchdog.close(), counter.close()]);
});

it('gives up a queue read that never answers and goes on looking at the other slots', async () => {
  const wedged = { queue: { name: 'wedged', getWaitingCount: () => new Promise<number>(() => undefined) }, make: () => new FakeWorker() as unknown as Worker };
  const stuck = slot(() => 2);
  const watchdog = startFetchWatchdog([wedged, stuck.slot], { intervalMs: 20, mayRun: () => true, logger });
  await waitFor('the stuck slot replaced behind the wedged read', () => stuck.made.length >= 2, 5000, { intervalMs: 5 });
  expect(lines.join('')).toContain('the queue read had no answer in time');
  await watchdog.close();
});
