import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';

/**
 * The one child-process manager of the tools, the soak, the bench and the tests. Each child leads
 * its own process group, so a signal to it also reaches anything it forked (a cluster's workers);
 * a parent that exits takes its children with it. `start()` again after the child ended is a
 * restart. Output goes to a log file, or is kept in memory for `output()` and `waitForOutput()`.
 */
export const PROJECT_ROOT = resolve(__dirname, '..', '..');

export interface ChildOptions {
  readonly name: string;
  /** Default: this Node binary. */
  readonly command?: string;
  readonly args: readonly string[];
  /** The whole environment of the child (see baseEnv()). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Default: the project root. */
  readonly cwd?: string;
  /** stdout and stderr appended to this file; without it they are kept in memory. */
  readonly logFile?: string;
  /** In memory: keep stdout too (default); false sends it to /dev/null (a gateway logs a line per request). */
  readonly keepStdout?: boolean;
  /** In memory: how much of the end is kept; default 1 MiB. */
  readonly keepBytes?: number;
  /** Sent to the group when this process exits with the child still running; default SIGKILL. */
  readonly parentExitSignal?: NodeJS.Signals;
}

const DEFAULT_KEEP_BYTES = 1024 * 1024;

/** Only what a Node process needs, so the caller's own WALLET_*, REDIS_URL and the like cannot leak in. */
export function baseEnv(): Record<string, string> {
  const keep = ['PATH', 'HOME', 'TMPDIR', 'LANG', 'NODE_OPTIONS'];
  return Object.fromEntries(keep.flatMap((k) => (process.env[k] === undefined ? [] : [[k, process.env[k] as string]])));
}

/** Children still running, signalled at once when this process exits (an uncaught error, process.exit). */
const live = new Set<Child>();
let exitHookInstalled = false;
function trackForExit(child: Child): void {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => {
      for (const c of live) c.signalGroup(c.options.parentExitSignal ?? 'SIGKILL');
    });
  }
  live.add(child);
}

function isRunning(child: ChildProcess | undefined): child is ChildProcess {
  return child !== undefined && child.exitCode === null && child.signalCode === null;
}

export class Child {
  private child: ChildProcess | undefined;
  private exitedPromise: Promise<number | null> = Promise.resolve(null);
  private text = '';
  private stdoutText = '';
  private readonly waiters: { needle: string; found: () => void }[] = [];
  /** How many times it was started; the first start included. */
  starts = 0;
  /** Called when a run ends without kill(), stop() or signalGroup(): it crashed, or exited by itself. */
  onCrash: ((detail: string) => void) | undefined;
  private exitExpected = false;

  constructor(readonly options: ChildOptions) {}

  get name(): string {
    return this.options.name;
  }

  /** The last run's process id (its group's id too). */
  get pid(): number {
    const pid = this.child?.pid;
    if (pid === undefined) throw new Error(`${this.name} was never started`);
    return pid;
  }

  /** Resolves with the last run's exit code (null after a signal). */
  get exited(): Promise<number | null> {
    return this.exitedPromise;
  }

  isRunning(): boolean {
    return isRunning(this.child);
  }

  /** Resolves once the process runs; rejects when it could not be started (e.g. ENOENT). */
  async start(): Promise<void> {
    if (this.isRunning()) throw new Error(`${this.name} is already running`);
    const o = this.options;
    const fd = o.logFile === undefined ? undefined : openSync(o.logFile, 'a');
    let child: ChildProcess;
    try {
      const stdout = fd ?? (o.keepStdout === false ? 'ignore' : 'pipe');
      child = spawn(o.command ?? process.execPath, o.args, { cwd: o.cwd ?? PROJECT_ROOT, env: { ...o.env }, detached: true, stdio: ['ignore', stdout, fd ?? 'pipe'] });
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
    this.text = '';
    this.stdoutText = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      this.stdoutText = this.keepEnd(this.stdoutText + chunk.toString('utf8'));
      this.collect(chunk);
    });
    child.stderr?.on('data', (chunk: Buffer) => this.collect(chunk));
    this.exitExpected = false;
    this.exitedPromise = new Promise((done) =>
      child.once('exit', (code, signal) => {
        if (!this.exitExpected) this.onCrash?.(`${this.name} exited by itself (${signal ?? `code ${code}`})`);
        done(code);
      }),
    );
    const spawned = await new Promise<Error | undefined>((done) => {
      child.once('spawn', () => done(undefined));
      child.once('error', (err) => done(err));
    });
    if (spawned !== undefined) {
      // No 'exit' comes for a process that never started: stop() and kill() must not wait for one.
      this.exitExpected = true;
      this.exitedPromise = Promise.resolve(null);
      const code = (spawned as NodeJS.ErrnoException).code ?? spawned.message;
      throw new Error(`${this.name}: ${o.command ?? process.execPath} could not be started (${code}${code === 'ENOENT' ? ': not installed?' : ''})`);
    }
    this.child = child;
    this.starts += 1;
    trackForExit(this);
    void this.exitedPromise.then(() => live.delete(this));
  }

  /** The signal to the whole group; resolves with the exit code once the leader is gone. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<number | null> {
    if (this.isRunning()) this.signalGroup(signal);
    return this.exitedPromise;
  }

  /** SIGTERM to the process, SIGKILL to its group after `graceMs`; resolves once it is gone. */
  async stop(graceMs = 5000): Promise<void> {
    const child = this.child;
    this.exitExpected = true;
    if (isRunning(child)) {
      child.kill('SIGTERM');
      const timer = new Promise<void>((done) => setTimeout(done, graceMs).unref());
      await Promise.race([this.exitedPromise, timer]);
    }
    // Whatever is left of the group (cluster workers of a leader that died first) goes too.
    this.signalGroup('SIGKILL');
    await this.exitedPromise;
  }

  /** stdout and stderr as they came (the log file's, or the memory's), or their last `bytes`. */
  output(bytes?: number): string {
    let text = this.text;
    if (this.options.logFile !== undefined) {
      try {
        text = readFileSync(this.options.logFile, 'utf8');
      } catch {
        text = '';
      }
    }
    return bytes === undefined ? text : text.slice(-bytes);
  }

  /** stdout alone (kept in memory), e.g. a report whose progress went to stderr. */
  stdout(): string {
    return this.stdoutText;
  }

  /** Resolves once the output (kept in memory) holds `needle`; rejects when the process exits first. */
  waitForOutput(needle: string, timeoutMs = 20_000): Promise<void> {
    if (this.text.includes(needle)) return Promise.resolve();
    return new Promise<void>((found, fail) => {
      const timer = setTimeout(() => fail(new Error(`no "${needle}" from ${this.name} within ${timeoutMs} ms:\n${this.output(2000)}`)), timeoutMs);
      void this.exitedPromise.then((code) => {
        clearTimeout(timer);
        fail(new Error(`${this.name} exited (${code}) before printing "${needle}":\n${this.output(2000)}`));
      });
      this.waiters.push({ needle, found: () => (clearTimeout(timer), found()) });
    });
  }

  /** Synchronous: for the exit hook and a parent that is going down. */
  signalGroup(signal: NodeJS.Signals): void {
    this.exitExpected = true;
    const pid = this.child?.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, signal);
    } catch {
      // ESRCH: the group is gone already.
    }
  }

  private collect(chunk: Buffer): void {
    this.text += chunk.toString('utf8');
    for (const w of [...this.waiters]) {
      if (this.text.includes(w.needle)) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        w.found();
      }
    }
    this.text = this.keepEnd(this.text);
  }

  private keepEnd(text: string): string {
    const keep = this.options.keepBytes ?? DEFAULT_KEEP_BYTES;
    return text.length > keep ? text.slice(-keep) : text;
  }
}

/** A TypeScript entry of this project run by Node with the tsx loader in one process (no wrapper). */
export function tsEntry(entry: string): string[] {
  // `node --import tsx`: the tsx CLI would put the program in a grandchild.
  return ['--import', 'tsx', entry];
}
