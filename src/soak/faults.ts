import { CHAOS_DEFAULT_CODES, mulberry32 } from '../sim/faults';
import type { FaultController } from '../sim';
import { WALLET_CODES } from '../wallet/codes';
import type { TransactionAction } from '../wallet/protocol';

/**
 * The soak's fault scheduler, seeded. On top of the simulator's chaos it arms wallet faults at a
 * steady pace (codes of the retry and compensation lists, "applied but the answer lost" by a hang
 * past the deadline or a reset, resets without applying, slow answers, debits applied long after
 * the gateway gave up on them, terminates refused with a retry code or left without an answer),
 * and at fixed points of the run's progress SIGKILLs a gateway or a worker (then restarts it) or
 * restarts Redis. With `outageSeconds` a wallet goes down once, at 30 % of the run, for that long:
 * every call answered 12 for the first half and never answered for the second, the health check
 * failing throughout. With several wallets each armed fault goes to one of them (drawn apart from
 * the schedule's own draws), never to the wallet that is down, and the outage takes down one.
 */
export interface Killable {
  readonly name: string;
  kill(): Promise<void>;
  /** Starts it again and resolves once it serves. */
  restart(): Promise<void>;
  /** A worker: stops it (SIGSTOP) without killing it, and lets it go on (SIGCONT). */
  pause?(): void;
  resume?(): void;
}

/** One wallet's simulator as the scheduler sees it. */
export interface WalletFaults {
  readonly name: string;
  readonly faults: FaultController;
}

export interface SchedulerOptions {
  readonly seed: number;
  /** Every wallet of the run, in registry order. */
  readonly wallets: readonly WalletFaults[];
  /** The index in `wallets` of the wallet the outage takes down. */
  readonly outageWallet: number;
  /** Arm a wallet fault every this many ms; 0 = none (chaos alone). */
  readonly walletFaultEveryMs: number;
  readonly walletTimeoutMs: number;
  readonly kills: number;
  /** Worker pauses (SIGSTOP, then SIGCONT after pauseMs): a run stalled past its lock meets the run that replaced it. */
  readonly pauses: number;
  readonly pauseMs: number;
  /** How long a killed worker's jobs may take to be picked up again (its lock, then the next stall check). */
  readonly takeoverMs: number;
  readonly redisRestarts: number;
  readonly processes: readonly Killable[];
  readonly redis: Killable | undefined;
  /** A wallet outage this long, once; 0 = none. */
  readonly outageSeconds: number;
  /** 0..1: how far the engine script is. */
  readonly progress: () => number;
  readonly log: (line: string) => void;
}

export type WalletFaultKind =
  | 'retry-code'
  | 'compensation-code'
  | 'applied-then-timeout'
  | 'applied-then-reset'
  | 'reset'
  | 'slow'
  | 'late-debit'
  | 'terminate-code'
  | 'terminate-unknown';

/** A worker stopped past its job lock: whatever another worker took over meanwhile was taken from it. */
export interface PauseWindow {
  readonly worker: string;
  readonly from: number;
  readonly to: number;
}

export interface SchedulerCounts {
  walletFaults: Record<WalletFaultKind, number>;
  kills: Record<string, number>;
  pauses: number;
  redisRestarts: number;
}

const RETRY_CODES = WALLET_CODES.filter((c) => c.spec && c.retry !== 'none').map((c) => c.code);
const COMPENSATION_CODES = WALLET_CODES.filter((c) => c.compensate).map((c) => c.code);
const MONEY_OPS: readonly TransactionAction[] = ['debit', 'credit', 'rollback'];
/** A late debit is applied this many wallet deadlines after it was sent: well after the gateway gave up and concluded "never applied". */
export const LATE_DEBIT_DEADLINES = { min: 4, max: 8 } as const;

/** Credits refused with a retry code as a pause begins: retry runs for the paused worker to hold. */
const PAUSE_RETRIES = 30;

/** How far into the run the wallet outage begins. */
const OUTAGE_AT = 0.3;

/** Evenly spread points of progress in (0, 1), the same for a given count. */
function points(count: number, offset: number): number[] {
  return Array.from({ length: count }, (_, i) => (i + offset) / (count + 1));
}

export class FaultScheduler {
  readonly counts: SchedulerCounts = {
    walletFaults: {
      'retry-code': 0,
      'compensation-code': 0,
      'applied-then-timeout': 0,
      'applied-then-reset': 0,
      reset: 0,
      slow: 0,
      'late-debit': 0,
      'terminate-code': 0,
      'terminate-unknown': 0,
    },
    kills: {},
    pauses: 0,
    redisRestarts: 0,
  };
  private readonly rng: () => number;
  private timer: NodeJS.Timeout | undefined;
  private watcher: NodeJS.Timeout | undefined;
  /** Kills, Redis restarts and the outage under way: one kill or restart at a time. */
  private readonly inFlight = new Set<Promise<void>>();
  /** A pause runs beside the kills of gateways, never beside a worker's kill or a Redis restart. */
  private pausing: Promise<void> | undefined;
  private redisRestarting = false;
  /** Each kill's point of progress and its victim, drawn up front: a worker's kill waits while another worker is paused. */
  private readonly killAt: { at: number; victim: Killable }[];
  private readonly pauseAt: number[];
  private readonly redisAt: number[];
  /** Operations slowed for a moment, per wallet. */
  private readonly slowOps = new Map<FaultController, Set<TransactionAction>>();
  /** The first failure of a kill or restart: the run cannot be trusted past it. */
  failure: Error | undefined;
  /**
   * The pauses, for attributing the jobs taken over during each to it: a pause starts only once a
   * killed worker's jobs have all been picked up, so nothing else stalls inside a window.
   */
  readonly pauseWindows: PauseWindow[] = [];
  private lastWorkerKillAt = 0;
  /** When the wallet outage began and ended (ms since the epoch), once it has. */
  outage: { startedAt: number; endedAt: number | undefined } | undefined;
  private outageAt: number[];
  /** Which wallet an armed fault goes to: a stream of its own, so one wallet keeps the schedule of one. */
  private readonly walletRng: () => number;

  constructor(private readonly options: SchedulerOptions) {
    this.rng = mulberry32(options.seed ^ 0x5eed);
    this.walletRng = mulberry32(options.seed ^ 0x3a11e7);
    this.killAt = points(options.kills, 0.5).map((at) => ({ at, victim: this.pick(options.processes) }));
    this.pauseAt = points(options.pauses, 0.25);
    this.redisAt = points(options.redisRestarts, 0.75);
    this.outageAt = options.outageSeconds > 0 ? [OUTAGE_AT] : [];
  }

  start(): void {
    if (this.options.walletFaultEveryMs > 0) this.timer = setInterval(() => this.armWalletFault(), this.options.walletFaultEveryMs);
    this.watcher = setInterval(() => this.checkProgress(), 100);
  }

  /**
   * Stops arming and waits for any kill or restart under way, so every process runs again. A
   * kill or restart the traffic ended before (each waits for the one before it, and a fast run
   * can finish first) runs now, one after the other, while the background work still settles:
   * a run always has every fault it asked for.
   */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    clearInterval(this.watcher);
    await this.settled();
    for (; this.killAt.length > 0; this.killAt.shift()) await this.settled(this.killOne((this.killAt[0] as { victim: Killable }).victim));
    for (; this.pauseAt.length > 0; this.pauseAt.shift()) {
      this.trackPause(this.pauseOne());
      await this.settled();
    }
    for (; this.redisAt.length > 0 && this.options.redis; this.redisAt.shift()) await this.settled(this.restartRedis(this.options.redis));
    for (; this.outageAt.length > 0; this.outageAt.shift()) await this.settled(this.walletDown());
    for (const [faults, ops] of this.slowOps) for (const op of ops) faults.latency(op, 0);
  }

  /** Like `stop()`, but the kills and restarts still planned are dropped (the run is over early). */
  async abort(): Promise<void> {
    this.killAt.length = 0;
    this.pauseAt.length = 0;
    this.redisAt.length = 0;
    this.outageAt.length = 0;
    await this.stop();
    for (const w of this.options.wallets) w.faults.down(null);
  }

  private async settled(work?: Promise<void>): Promise<void> {
    if (work !== undefined) this.track(work);
    while (this.inFlight.size > 0 || this.pausing !== undefined) await Promise.all([...this.inFlight, this.pausing]);
  }

  private pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.rng() * items.length)] as T;
  }

  /** The wallets that are up: a down wallet's armed faults would only pile up and all hit the first calls after it. */
  private walletsUp(): readonly WalletFaults[] {
    const down = this.outage !== undefined && this.outage.endedAt === undefined ? this.options.wallets[this.options.outageWallet] : undefined;
    return this.options.wallets.filter((w) => w !== down);
  }

  private armWalletFault(): void {
    const up = this.walletsUp();
    if (up.length === 0) return;
    const f = (up.length === 1 ? up[0] : up[Math.floor(this.walletRng() * up.length)])!.faults;
    const x = this.rng();
    const op = this.pick(MONEY_OPS);
    let kind: WalletFaultKind;
    if (x < 0.27) {
      kind = 'retry-code';
      const code = this.pick(RETRY_CODES);
      f.failNext(this.pick(['credit', 'rollback'] as const), 1 + Math.floor(this.rng() * 2), code);
    } else if (x < 0.4) {
      kind = 'compensation-code';
      f.failNext('debit', 1, this.pick(COMPENSATION_CODES));
    } else if (x < 0.52) {
      kind = 'applied-then-timeout';
      f.applyThenDrop(op, 1, { mode: 'hang' });
    } else if (x < 0.64) {
      kind = 'applied-then-reset';
      f.applyThenDrop(op, 1, { mode: 'reset' });
    } else if (x < 0.76) {
      kind = 'reset';
      f.reset(op, 1);
    } else if (x < 0.86) {
      // The wallet's queue is slow: the gateway times out, compensates, hears 34 ("not there") and
      // concludes "never applied" — then the debit is applied. Only the re-check can still roll it back.
      kind = 'late-debit';
      const { min, max } = LATE_DEBIT_DEADLINES;
      f.delayNext('debit', 1, Math.round(this.options.walletTimeoutMs * (min + this.rng() * (max - min))));
    } else if (x < 0.9) {
      // A terminate refused once to a few times with a code the caller retries.
      kind = 'terminate-code';
      f.failNext('terminate', 1 + Math.floor(this.rng() * 3), this.pick(CHAOS_DEFAULT_CODES));
    } else if (x < 0.93) {
      // A terminate whose outcome is unknown: lost before the wallet, or applied with the answer lost.
      kind = 'terminate-unknown';
      const y = this.rng();
      if (y < 1 / 3) f.reset('terminate', 1);
      else f.applyThenDrop('terminate', 1, { mode: y < 2 / 3 ? 'reset' : 'hang' });
    } else {
      kind = 'slow';
      // Mostly under the gateway's deadline; now and then a little past it (applied after the timeout).
      const ms = Math.round(this.options.walletTimeoutMs * (0.2 + this.rng()));
      f.latency(op, ms);
      const slowed = this.slowOps.get(f) ?? new Set();
      slowed.add(op);
      this.slowOps.set(f, slowed);
      setTimeout(() => {
        f.latency(op, 0);
        slowed.delete(op);
      }, 1000).unref();
    }
    this.counts.walletFaults[kind] += 1;
  }

  private checkProgress(): void {
    const done = this.options.progress();
    // A pause due goes first: a worker's kill would put it off by the time its jobs take to be picked up.
    const pauseDue = this.pauseAt.length > 0 && (this.pauseAt[0] as number) <= done;
    for (let next = this.killAt[0]; next !== undefined && next.at <= done && this.inFlight.size === 0; next = this.killAt[0]) {
      // What a worker loses during a pause is the pause's: its kill waits until the pause is over.
      if ((this.pausing !== undefined || pauseDue) && next.victim.pause !== undefined) break;
      this.killAt.shift();
      this.track(this.killOne(next.victim));
    }
    const quiet = !this.redisRestarting && Date.now() >= this.lastWorkerKillAt + this.options.takeoverMs;
    if (this.pauseAt.length > 0 && (this.pauseAt[0] as number) <= done && this.pausing === undefined && quiet) {
      this.pauseAt.shift();
      this.trackPause(this.pauseOne());
    }
    while (this.redisAt.length > 0 && (this.redisAt[0] as number) <= done && this.inFlight.size === 0 && this.pausing === undefined && this.options.redis) {
      this.redisAt.shift();
      this.track(this.restartRedis(this.options.redis));
    }
    if (this.outageAt.length > 0 && (this.outageAt[0] as number) <= done) {
      this.outageAt.shift();
      this.track(this.walletDown());
    }
  }

  private trackPause(work: Promise<void>): void {
    this.pausing = work
      .catch((err: unknown) => {
        this.failure ??= err instanceof Error ? err : new Error(String(err));
      })
      .finally(() => {
        this.pausing = undefined;
      });
  }

  private track(work: Promise<void>): void {
    const p = work.catch((err: unknown) => {
      this.failure ??= err instanceof Error ? err : new Error(String(err));
    });
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
  }

  private async killOne(victim: Killable): Promise<void> {
    const downMs = 200 + Math.floor(this.rng() * 1300);
    this.options.log(`fault: SIGKILL ${victim.name}, restart in ${downMs} ms`);
    if (victim.pause !== undefined) this.lastWorkerKillAt = Date.now();
    await victim.kill();
    const kind = victim.name.replace(/-\d+$/, '');
    this.counts.kills[kind] = (this.counts.kills[kind] ?? 0) + 1;
    await new Promise((r) => setTimeout(r, downMs));
    await victim.restart();
  }

  /** A worker stopped past its job lock: its jobs are handed to another run, and then it goes on. */
  private async pauseOne(): Promise<void> {
    const pausable = this.options.processes.filter((p) => p.pause !== undefined && p.resume !== undefined);
    if (pausable.length === 0) return;
    const victim = this.pick(pausable);
    const quietAt = this.lastWorkerKillAt + this.options.takeoverMs;
    if (Date.now() < quietAt) await new Promise((r) => setTimeout(r, quietAt - Date.now()));
    // Catch its runs mid-call: the next few credits are refused with a retry code, so wins go to
    // the workers' retries (after delay(1), 301 ms), and credits and rollbacks answer slowly for a
    // moment, so the worker is paused holding runs whose wallet call is out.
    const slow = Math.round(this.options.walletTimeoutMs * 0.8);
    const code = this.pick(RETRY_CODES);
    for (const w of this.options.wallets) {
      w.faults.failNext('credit', PAUSE_RETRIES, code);
      w.faults.latency('credit', slow);
      w.faults.latency('rollback', slow);
    }
    await new Promise((r) => setTimeout(r, slow * 0.75));
    this.options.log(`fault: SIGSTOP ${victim.name} for ${this.options.pauseMs} ms (past its job lock)`);
    const from = Date.now();
    victim.pause?.();
    for (const w of this.options.wallets) {
      w.faults.latency('credit', 0);
      w.faults.latency('rollback', 0);
    }
    await new Promise((r) => setTimeout(r, this.options.pauseMs));
    this.pauseWindows.push({ worker: victim.name, from, to: Date.now() });
    victim.resume?.();
    this.counts.pauses += 1;
  }

  private async walletDown(): Promise<void> {
    const ms = this.options.outageSeconds * 1000;
    const wallet = this.options.wallets[this.options.outageWallet]!;
    const which = this.options.wallets.length === 1 ? 'the wallet' : `wallet ${wallet.name}`;
    this.options.log(`fault: ${which} down for ${this.options.outageSeconds} s (code 12, then no answer)`);
    this.outage = { startedAt: Date.now(), endedAt: undefined };
    wallet.faults.down('code');
    await new Promise((r) => setTimeout(r, ms / 2));
    wallet.faults.down('hang');
    await new Promise((r) => setTimeout(r, ms / 2));
    wallet.faults.down(null);
    this.outage.endedAt = Date.now();
    this.options.log(`fault: ${which} is back`);
  }

  private async restartRedis(redis: Killable): Promise<void> {
    const downMs = 300 + Math.floor(this.rng() * 1200);
    this.options.log(`fault: SIGKILL ${redis.name}, start it again in ${downMs} ms`);
    this.redisRestarting = true;
    try {
      await redis.kill();
      await new Promise((r) => setTimeout(r, downMs));
      await redis.restart();
    } finally {
      this.redisRestarting = false;
    }
    this.counts.redisRestarts += 1;
  }
}
