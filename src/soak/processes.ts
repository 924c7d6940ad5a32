import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { redisAnswers } from '../store/redis';

/**
 * Child processes of the demo and the soak: Redis, gateways and workers. Each child leads its own
 * process group (so a SIGKILL reaches anything it forked) and writes its output to a log file in
 * the run directory. `kill()` is the fault (SIGKILL, no warning); `stop()` is the clean end.
 */
export const PROJECT_ROOT = resolve(__dirname, '..', '..');

const POLL_MS = 50;

/** Polls `check` until it holds, failing with `what` past the deadline or when `alive` turns false. */
export async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number, alive: () => boolean = () => true): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (!alive()) throw new Error(`${what}: the process exited`);
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

function running(child: ChildProcess | undefined): child is ChildProcess {
  return child !== undefined && child.exitCode === null && child.signalCode === null;
}

/** A restartable child process with a log file; `start()` again after `kill()` is a restart. */
export class ManagedProcess {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  /** How many times it was started; the first start included. */
  starts = 0;
  /** Called when it exits without `kill()` or `stop()`: it crashed. */
  onCrash: ((detail: string) => void) | undefined;
  private exitExpected = false;

  constructor(
    readonly name: string,
    private readonly command: string,
    private readonly args: readonly string[],
    private readonly env: Readonly<Record<string, string>>,
    readonly logPath: string,
  ) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  isRunning(): boolean {
    return running(this.child);
  }

  start(): void {
    if (this.isRunning()) throw new Error(`${this.name} is already running`);
    const fd = openSync(this.logPath, 'a');
    try {
      const child = spawn(this.command, this.args, { cwd: PROJECT_ROOT, env: { ...this.env }, detached: true, stdio: ['ignore', fd, fd] });
      this.exitExpected = false;
      this.exited = new Promise((r) =>
        child.once('exit', (code, signal) => {
          if (!this.exitExpected) this.onCrash?.(`${this.name} exited by itself (${signal ?? `code ${code}`})`);
          r();
        }),
      );
      child.once('error', () => undefined);
      this.child = child;
      this.starts += 1;
    } finally {
      closeSync(fd);
    }
  }

  /** SIGKILL to the whole group; resolves once the leader is gone. */
  async kill(): Promise<void> {
    this.signalGroup('SIGKILL');
    await this.exited;
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it is gone. */
  async stop(graceMs = 5000): Promise<void> {
    if (this.isRunning()) {
      this.signalGroup('SIGTERM');
      const timer = new Promise<void>((r) => setTimeout(r, graceMs).unref());
      await Promise.race([this.exited, timer]);
    }
    await this.kill();
  }

  /** Synchronous last resort when the parent itself is exiting. */
  killNow(): void {
    this.signalGroup('SIGKILL');
  }

  /** The last `bytes` of the log, for a start that failed. */
  tail(bytes = 4000): string {
    try {
      return readFileSync(this.logPath, 'utf8').slice(-bytes);
    } catch {
      return '';
    }
  }

  private signalGroup(signal: NodeJS.Signals): void {
    this.exitExpected = true;
    const pid = this.child?.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, signal);
    } catch {
      // ESRCH: the group is gone already.
    }
  }
}

export interface RedisOptions {
  /** AOF with fsync on every write: what the soak's durability claim rests on. */
  readonly aof: boolean;
  readonly dir: string;
  readonly port: number;
  readonly baseEnv: Readonly<Record<string, string>>;
}

/** A private redis-server; `restart()` after a SIGKILL comes back on the same port and data directory. */
export class RedisServer {
  readonly url: string;
  private readonly process: ManagedProcess;

  constructor(options: RedisOptions) {
    const dataDir = join(options.dir, 'redis');
    mkdirSync(dataDir, { recursive: true });
    const persistence = options.aof ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no'];
    const args = ['--port', String(options.port), '--bind', '127.0.0.1', '--dir', dataDir, '--save', '', ...persistence];
    this.url = `redis://127.0.0.1:${options.port}`;
    this.process = new ManagedProcess('redis', 'redis-server', args, options.baseEnv, join(options.dir, 'redis.log'));
  }

  get restarts(): number {
    return Math.max(0, this.process.starts - 1);
  }

  async start(): Promise<void> {
    this.process.start();
    // PING answers LOADING while the AOF is replayed; ready means PONG.
    await waitFor('redis-server answering PING', () => redisAnswers(this.url), 30_000, () => this.process.isRunning());
  }

  kill(): Promise<void> {
    return this.process.kill();
  }

  async restart(): Promise<void> {
    await this.process.kill();
    await this.start();
  }

  stop(): Promise<void> {
    return this.process.stop(2000);
  }

  killNow(): void {
    this.process.killNow();
  }
}

/** A gateway or worker: TypeScript entry run by node with the tsx loader (no wrapper process). */
export function nodeProcess(name: string, entry: string, env: Readonly<Record<string, string>>, logDir: string): ManagedProcess {
  return new ManagedProcess(name, process.execPath, ['--import', 'tsx', entry], env, join(logDir, `${name}.log`));
}
