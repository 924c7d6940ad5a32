'use strict';
/**
 * Loaded into every process of the bench's main gateway (node --require; cluster workers inherit
 * it) so that a slow request can be explained: every GC pause and every stretch in which the event
 * loop could not run, each with its wall-clock time. Per window of $BENCH_STALL_WINDOW_MS (default
 * 100 ms) it keeps the window's largest event-loop delay (perf_hooks monitorEventLoopDelay), the
 * CPU the process used in it and the time its main thread waited for a core (/proc/self/schedstat:
 * the kernel's run-queue delay), whenever the delay passed $BENCH_STALL_MS (default 50). A blocked
 * loop burns CPU; a process the kernel kept off the cores does not, and shows run-queue delay.
 * Everything is written to $BENCH_STALL_DIR/<pid>.json once a second (whole, then renamed); the
 * bench keeps that directory in memory, since a write to a disk can block the loop it watches.
 * Bench code only: src/ knows nothing of it, and production runs without it.
 */
const { monitorEventLoopDelay, performance, PerformanceObserver, constants } = require('node:perf_hooks');
const { readFileSync, renameSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

const dir = process.env.BENCH_STALL_DIR ?? '.';
const windowMs = Number(process.env.BENCH_STALL_WINDOW_MS ?? 100);
const thresholdMs = Number(process.env.BENCH_STALL_MS ?? 50);
/** GC pauses at least this long are listed one by one; every pause is counted. */
const longGcMs = 10;
const KINDS = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};

const state = { pid: process.pid, gc: {}, longGc: [], stalls: [], maxLoopDelayMs: 0 };

new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    const kind = KINDS[entry.detail?.kind] ?? 'other';
    const totals = (state.gc[kind] ??= { count: 0, ms: 0, maxMs: 0 });
    totals.count += 1;
    totals.ms += entry.duration;
    totals.maxMs = Math.max(totals.maxMs, entry.duration);
    if (entry.duration >= longGcMs) state.longGc.push({ at: Math.round(performance.timeOrigin + entry.startTime), ms: Math.round(entry.duration), kind });
  }
}).observe({ entryTypes: ['gc'] });

/** ns on a core and ns waiting for one, of this process's main thread. */
function schedstat() {
  try {
    const [run, wait] = readFileSync('/proc/self/schedstat', 'utf8').split(' ');
    return { run: Number(run), wait: Number(wait) };
  } catch {
    return { run: 0, wait: 0 };
  }
}

const delay = monitorEventLoopDelay({ resolution: 10 });
delay.enable();
let last = { at: Date.now(), cpu: process.cpuUsage(), sched: schedstat() };
const windowTimer = setInterval(() => {
  const maxMs = delay.max / 1e6;
  delay.reset();
  const now = { at: Date.now(), cpu: process.cpuUsage(), sched: schedstat() };
  state.maxLoopDelayMs = Math.max(state.maxLoopDelayMs, maxMs);
  if (maxMs >= thresholdMs) {
    const cpuMs = (now.cpu.user + now.cpu.system - last.cpu.user - last.cpu.system) / 1000;
    state.stalls.push({
      from: last.at,
      to: now.at,
      loopDelayMs: Math.round(maxMs),
      cpuMs: Math.round(cpuMs),
      runQueueMs: Math.round((now.sched.wait - last.sched.wait) / 1e6),
    });
  }
  last = now;
}, windowMs);
windowTimer.unref();

function publish() {
  const file = join(dir, `${process.pid}.json`);
  writeFileSync(`${file}.part`, JSON.stringify(state));
  renameSync(`${file}.part`, file);
}
setInterval(publish, 1000).unref();
process.on('exit', publish);
