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

/** A slot whose queue holds `waiting()` waiting jobs and delayed jobs due at `delayedDue()` (ms). */
function slot(waiting: () => number, delayedDue: () => number[] = () => []) {
  const made: FakeWorker[] = [];
  const queue = {
    name: 'q',
    getWaitingCount: () => Promise.resolve(waiting()),
    getDelayedCount: (before: number) => Promise.resolve(delayedDue().filter((at) => at < before).length),
  };
  return { made, slot: { queue, make: () => (made.push(new FakeWorker()), made.at(-1) as unknown as Worker) } };
}

it('replaces a Worker that takes no job while its queue holds waiting ones, and closes the old one gracefully', async () => {
  const stuck = slot(() => 2);
  const watchdog = startFetchWatchdog([stuck.slot], { intervalMs: 20, logger });
  await waitFor('a second Worker', () => stuck.made.length >= 2, 5000, { intervalMs: 5 });
  expect(stuck.made[0]!.closedWith).toBe(false);
  expect(watchdog.workers()).toEqual([stuck.made.at(-1)]);
  expect(lines.join('')).toContain('worker took no due job: replaced');
  await watchdog.close();
  expect(stuck.made.at(-1)!.closedWith).toBe(false);
});

it('replaces a Worker whose queue holds only delayed jobs past their time by more than a look, not one whose delayed jobs are not due yet', async () => {
  let clock = 1_000_000;
  const overdue = slot(() => 0, () => [clock - 500]);
  const early = slot(() => 0, () => [clock - 5, clock + 60_000]);
  const watchdog = startFetchWatchdog([overdue.slot, early.slot], { intervalMs: 20, logger, now: () => (clock += 1) });
  await waitFor('a second Worker for the overdue queue', () => overdue.made.length >= 2, 5000, { intervalMs: 5 });
  // Many more looks: a job due within the last look is a live Worker's to take, not a strike.
  const looked = clock;
  await waitFor('twenty more looks', () => clock >= looked + 40, 5000, { intervalMs: 5 });
  expect(early.made).toHaveLength(1);
  await watchdog.close();
});

it('leaves alone a Worker that starts jobs, one with nothing due, and one whose queue is held back, while a stuck one beside them is replaced', async () => {
  let ticks = 0;
  const busy = slot(() => 2);
  const idle = slot(() => 0);
  const held = slot(() => 2);
  const stuck = slot(() => 2);
  const watchdog = startFetchWatchdog([busy.slot, idle.slot, { ...held.slot, heldBack: () => true }, stuck.slot], { intervalMs: 10, logger });
  const activity = setInterval(() => busy.made[0]!.emit('active'), 3);
  // Many looks' worth of time, counted on the idle slot's queue reads.
  const counted = {
    queue: {
      name: 'q',
      getWaitingCount: () => {
        ticks += 1;
        return Promise.resolve(0);
      },
      getDelayedCount: () => Promise.resolve(0),
    },
    make: () => new FakeWorker() as unknown as Worker,
  };
  const counter = startFetchWatchdog([counted], { intervalMs: 10, logger });
  await waitFor('ten looks', () => ticks >= 10, 5000, { intervalMs: 5 });
  clearInterval(activity);
  expect([busy.made.length, idle.made.length, held.made.length]).toEqual([1, 1, 1]);
  expect(stuck.made.length).toBeGreaterThanOrEqual(2);
  await Promise.all([watchdog.close(), counter.close()]);
});

it('gives up a queue read that never answers and goes on looking at the other slots', async () => {
  const wedged = {
    queue: { name: 'wedged', getWaitingCount: () => new Promise<number>(() => undefined), getDelayedCount: () => Promise.resolve(0) },
    make: () => new FakeWorker() as unknown as Worker,
  };
  const stuck = slot(() => 2);
  const watchdog = startFetchWatchdog([wedged, stuck.slot], { intervalMs: 20, logger });
  await waitFor('the stuck slot replaced behind the wedged read', () => stuck.made.length >= 2, 5000, { intervalMs: 5 });
  expect(lines.join('')).toContain('the queue read had no answer in time');
  await watchdog.close();
});
