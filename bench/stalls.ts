import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type Redis from 'ioredis';
import type { SlowRequest } from './load';
import { cpuMicros } from './proc';

/**
 * What a slow request of the fixed-rate case met on its way: the gateway's GC pauses and stalled
 * event loops (bench/stall-monitor.cjs in its processes), Redis's own slow commands and latency
 * events, the load generator's event loop, and the box (its busy cores, what other programs took,
 * the run-queue delay of Redis and the simulator). Each slow request gets the first cause that
 * covers a good part of its time, in the order GC, blocked loop, kernel (the gateway waited for a
 * core), load generator, Redis, box.
 */

/** One GC pause of a gateway process. */
export interface GcPause {
  readonly pid: number;
  readonly at: number;
  readonly ms: number;
  readonly kind: string;
}

/** A window of a gateway process in which its event loop waited longer than the monitor's threshold. */
export interface LoopStall {
  readonly pid: number;
  readonly from: number;
  readonly to: number;
  readonly loopDelayMs: number;
  /** CPU the process used in the window: ≈ the delay when the loop was busy, ≈ 0 when it was kept off the cores. */
  readonly cpuMs: number;
  /** Time the main thread waited on the kernel's run queue in the window. */
  readonly runQueueMs: number;
}

/** What the stall monitor files say, all gateway processes together. */
export interface GatewayStallRecord {
  readonly gcPauses: GcPause[];
  readonly loopStalls: LoopStall[];
  /** GC pauses by kind over the whole run: count, total and largest ms, every process summed (max: the largest). */
  readonly gcTotals: Record<string, { count: number; ms: number; maxMs: number }>;
  readonly maxLoopDelayMs: number;
}

interface MonitorFile {
  pid: number;
  gc: Record<string, { count: number; ms: number; maxMs: number }>;
  longGc: { at: number; ms: number; kind: string }[];
  stalls: Omit<LoopStall, 'pid'>[];
  maxLoopDelayMs: number;
}

export function readStallMonitor(dir: string): GatewayStallRecord {
  const record: GatewayStallRecord = { gcPauses: [], loopStalls: [], gcTotals: {}, maxLoopDelayMs: 0 };
  if (!existsSync(dir)) return record;
  let maxLoopDelayMs = 0;
  for (const name of readdirSync(dir).filter((f) => f.endsWith('.json'))) {
    const file = JSON.parse(readFileSync(join(dir, name), 'utf8')) as MonitorFile;
    record.gcPauses.push(...file.longGc.map((g) => ({ pid: file.pid, ...g })));
    record.loopStalls.push(...file.stalls.map((s) => ({ pid: file.pid, ...s })));
    for (const [kind, t] of Object.entries(file.gc)) {
      const total = (record.gcTotals[kind] ??= { count: 0, ms: 0, maxMs: 0 });
      total.count += t.count;
      total.ms = Math.round(total.ms + t.ms);
      total.maxMs = Math.round(Math.max(total.maxMs, t.maxMs));
    }
    maxLoopDelayMs = Math.max(maxLoopDelayMs, file.maxLoopDelayMs);
  }
  return { ...record, maxLoopDelayMs: Math.round(maxLoopDelayMs) };
}

/** A window of the box, as the bench saw it. */
interface BoxWindow {
  readonly from: number;
  readonly to: number;
  /** Share of all cores busy (/proc/stat), 0–1. */
  readonly busy: number;
  /** Share of all cores taken by programs other than the bench's own (Redis, simulator, gateway, the bench). */
  readonly others: number;
  /** The load generator's largest event-loop delay in the window. */
  readonly benchLoopDelayMs: number;
  /** Run-queue waits of Redis's and the simulator's main threads in the window. */
  readonly redisRunQueueMs: number;
  readonly walletRunQueueMs: number;
}

function readBoxTicks(): { busy: number; total: number } {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal …: idle and iowait are not busy.
  const total = cpu.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busy: total - (cpu[3] ?? 0) - (cpu[4] ?? 0), total };
}

function runQueueNs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[1]);
  } catch {
    return 0;
  }
}

const TICK_US = 10_000;

/**
 * Samples the box every `windowMs` while a case runs: busy cores, what the bench's own processes
 * used of them (the rest is other programs), the load generator's loop delay, and the run-queue
 * waits of Redis and the simulator.
 */
export class BoxWatch {
  readonly windows: BoxWindow[] = [];
  private readonly delay = monitorEventLoopDelay({ resolution: 10 });
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly ours: () => number[],
    private readonly redisPid: number | undefined,
    private readonly walletPid: number | undefined,
    private readonly windowMs = 100,
  ) {}

  start(): void {
    const sample = () => ({
      at: Date.now(),
      box: readBoxTicks(),
      ours: this.ours().reduce((n, pid) => n + cpuMicros(pid), 0) + process.cpuUsage().user + process.cpuUsage().system,
      redis: runQueueNs(this.redisPid),
      wallet: runQueueNs(this.walletPid),
    });
    this.delay.enable();
    let last = sample();
    this.timer = setInterval(() => {
      const now = sample();
      const ticks = now.box.total - last.box.total;
      const busy = ticks === 0 ? 0 : (now.box.busy - last.box.busy) / ticks;
      // Our processes' CPU as a share of the cores over the same span (the ticks count every core).
      const oursShare = ticks === 0 ? 0 : (now.ours - last.ours) / (ticks * TICK_US);
      this.windows.push({
        from: last.at,
        to: now.at,
        busy: round2(busy),
        others: round2(Math.max(0, busy - oursShare)),
        benchLoopDelayMs: Math.round(this.delay.max / 1e6),
        redisRunQueueMs: Math.round((now.redis - last.redis) / 1e6),
        walletRunQueueMs: Math.round((now.wallet - last.wallet) / 1e6),
      });
      this.delay.reset();
      last = now;
    }, this.windowMs);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.delay.disable();
  }
}

const round2 = (n: number): number => Math.round(n * 100) / 100;

/** Redis's slow commands (SLOWLOG) and latency events (LATENCY), from the moment watchRedis() armed them. */
export interface RedisEvents {
  readonly slowCommands: { at: number; us: number; command: string }[];
  readonly latencyEvents: { event: string; at: number; ms: number }[];
}

/** Arms Redis's slow log and latency monitor at `thresholdMs` and clears both. */
export async function watchRedis(redis: Redis, thresholdMs: number): Promise<void> {
  await redis.config('SET', 'slowlog-log-slower-than', String(thresholdMs * 1000));
  await redis.config('SET', 'latency-monitor-threshold', String(thresholdMs));
  await redis.slowlog('RESET');
  await redis.call('LATENCY', 'RESET');
}

export async function readRedisEvents(redis: Redis): Promise<RedisEvents> {
  const slow = (await redis.slowlog('GET', 128)) as [number, number, number, string[]][];
  const latest = (await redis.call('LATENCY', 'LATEST')) as [string, number, number, number][];
  const latencyEvents: RedisEvents['latencyEvents'] = [];
  for (const [event] of latest) {
    const history = (await redis.call('LATENCY', 'HISTORY', event)) as [number, number][];
    latencyEvents.push(...history.map(([at, ms]) => ({ event, at: at * 1000, ms })));
  }
  return {
    slowCommands: slow.map(([, at, us, args]) => ({ at: at * 1000, us, command: args.slice(0, 2).join(' ') })),
    latencyEvents,
  };
}

export type StallCause = 'GC' | 'blocked loop' | 'kernel (gateway off the cores)' | 'load generator' | 'Redis' | 'box (cores busy)' | 'not found';

export interface ExplainedRequest extends SlowRequest {
  readonly cause: StallCause;
  /** What overlapped the request: the figures the cause was chosen from. */
  readonly evidence: string;
}

export interface StallReport {
  readonly thresholdMs: number;
  readonly slow: ExplainedRequest[];
  readonly byCause: Partial<Record<StallCause, number>>;
  /** GC pauses of the gateway's processes over the whole run, by kind. */
  readonly gatewayGc: GatewayStallRecord['gcTotals'];
  /** During the case: the gateway's loop stalls over the monitor's threshold, the largest, and its longest GC pause. */
  readonly gatewayLoopStalls: number;
  readonly gatewayMaxLoopDelayMs: number;
  readonly gatewayLongestGcMs: number;
  /** During the case: the load generator's largest loop delay, and the box's busiest window. */
  readonly benchMaxLoopDelayMs: number;
  readonly boxMaxBusy: number;
  readonly redis: RedisEvents;
  /** The box windows around slow requests only (a second either side). */
  readonly boxWindows: BoxWindow[];
}

const overlaps = (from: number, to: number, a: number, b: number): boolean => from <= b && a <= to;

/** Picks the first cause that covers at least a third of each slow request's time. */
export function explainStalls(
  during: { from: number; to: number },
  slow: readonly SlowRequest[],
  gateway: GatewayStallRecord,
  redis: RedisEvents,
  box: readonly BoxWindow[],
  thresholdMs: number,
): StallReport {
  const explained = slow.map((r): ExplainedRequest => {
    const from = r.at;
    const to = r.at + r.ms;
    const part = r.ms / 3;
    const gc = gateway.gcPauses.filter((g) => overlaps(from, to, g.at, g.at + g.ms));
    const gcMs = gc.reduce((n, g) => Math.max(n, g.ms), 0);
    const stalls = gateway.loopStalls.filter((s) => overlaps(from, to, s.from, s.to));
    const worst = stalls.reduce<LoopStall | undefined>((w, s) => (w === undefined || s.loopDelayMs > w.loopDelayMs ? s : w), undefined);
    const windows = box.filter((w) => overlaps(from, to, w.from, w.to));
    const benchDelay = windows.reduce((n, w) => Math.max(n, w.benchLoopDelayMs), 0);
    const redisSlow = redis.slowCommands.filter((c) => overlaps(from - 1000, to, c.at, c.at + 1000)).reduce((n, c) => Math.max(n, c.us / 1000), 0);
    const redisEvent = redis.latencyEvents.filter((e) => overlaps(from - 1000, to, e.at, e.at + 1000)).reduce((n, e) => Math.max(n, e.ms), 0);
    const redisQueue = windows.reduce((n, w) => n + w.redisRunQueueMs, 0);
    const busy = windows.length === 0 ? 0 : Math.max(...windows.map((w) => w.busy));
    const others = windows.length === 0 ? 0 : Math.max(...windows.map((w) => w.others));
    const evidence =
      `gateway GC max ${gcMs} ms (${gc.map((g) => g.kind).join(',') || '-'}), gateway loop delay ${worst?.loopDelayMs ?? 0} ms ` +
      `(cpu ${worst?.cpuMs ?? 0}, run queue ${worst?.runQueueMs ?? 0}), load generator loop ${benchDelay} ms, Redis slow ${Math.round(redisSlow)} ms / event ${redisEvent} ms / run queue ${redisQueue} ms, ` +
      `box busy ${Math.round(busy * 100)}% (others ${Math.round(others * 100)}%)`;
    let cause: StallCause = 'not found';
    if (gcMs >= part) cause = 'GC';
    else if (worst !== undefined && worst.loopDelayMs >= part && worst.cpuMs >= worst.loopDelayMs / 2) cause = 'blocked loop';
    else if (worst !== undefined && worst.loopDelayMs >= part) cause = 'kernel (gateway off the cores)';
    else if (benchDelay >= part) cause = 'load generator';
    else if (Math.max(redisSlow, redisEvent, redisQueue) >= part) cause = 'Redis';
    else if (busy >= 0.9) cause = 'box (cores busy)';
    return { ...r, cause, evidence };
  });
  const byCause: Partial<Record<StallCause, number>> = {};
  for (const r of explained) byCause[r.cause] = (byCause[r.cause] ?? 0) + 1;
  const near = box.filter((w) => slow.some((r) => overlaps(r.at - 1000, r.at + r.ms + 1000, w.from, w.to)));
  const stalls = gateway.loopStalls.filter((s) => overlaps(during.from, during.to, s.from, s.to));
  return {
    thresholdMs,
    slow: explained,
    byCause,
    gatewayGc: gateway.gcTotals,
    gatewayLoopStalls: stalls.length,
    gatewayMaxLoopDelayMs: stalls.reduce((n, s) => Math.max(n, s.loopDelayMs), 0),
    gatewayLongestGcMs: gateway.gcPauses.filter((g) => overlaps(during.from, during.to, g.at, g.at + g.ms)).reduce((n, g) => Math.max(n, g.ms), 0),
    benchMaxLoopDelayMs: box.reduce((n, w) => Math.max(n, w.benchLoopDelayMs), 0),
    boxMaxBusy: box.reduce((n, w) => Math.max(n, w.busy), 0),
    redis,
    boxWindows: near,
  };
}
