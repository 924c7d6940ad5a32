import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';

/**
 * The bench's child processes: each one the leader of its own process group, so stop() also
 * reaches a cluster's workers, and nothing outlives the run.
 */
export interface Service {
  readonly name: string;
  readonly pid: number;
  /** The last few KiB the process wrote (stderr; stdout too when kept), for a start that fails. */
  output(): string;
  /** SIGTERM to the process, SIGKILL to its group after `graceMs`; resolves once it is gone. */
  stop(graceMs?: number): Promise<void>;
  isRunning(): boolean;
}

const TAIL_BYTES = 8 * 1024;

/** Only what a Node process needs, so the caller's own WALLET_* or REDIS_URL cannot leak in. */
function baseEnv(): Record<string, string> {
  const keep = ['PATH', 'HOME', 'TMPDIR', 'LANG'];
  return Object.fromEntries(keep.flatMap((k) => (process.env[k] === undefined ? [] : [[k, process.env[k] as string]])));
}

export function startService(name: string, args: readonly string[], env: Record<string, string>, keepStdout = false): Service {
  const child = spawn(process.execPath, args, {
    cwd: process.cwd(),
    env: { ...baseEnv(), ...env },
    detached: true,
    // A gateway logs a line per request: stdout goes to /dev/null unless asked for.
    stdio: ['ignore', keepStdout ? 'pipe' : 'ignore', 'pipe'],
  });
  let tail = '';
  const keep = (chunk: Buffer): void => {
    tail = (tail + chunk.toString('utf8')).slice(-TAIL_BYTES);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const pid = child.pid;
  if (pid === undefined) throw new Error(`${name}: could not start ${args.join(' ')}`);

  const killGroup = (signal: NodeJS.Signals): void => {
    try {
      process.kill(-pid, signal);
    } catch {
      // ESRCH: the group is already gone.
    }
  };

  let stopping: Promise<void> | undefined;
  return {
    name,
    pid,
    output: () => tail,
    isRunning: () => child.exitCode === null && child.signalCode === null,
    stop(graceMs = 5000) {
      stopping ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGTERM');
          const timer = new Promise<void>((resolve) => setTimeout(resolve, graceMs).unref());
          await Promise.race([exited, timer]);
        }
        // Whatever is left of the group (cluster workers of a leader that died first) goes too.
        killGroup('SIGKILL');
        if (child.exitCode === null && child.signalCode === null) await exited;
      })();
      return stopping;
    },
  };
}

export async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs: number, service?: Service): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (service !== undefined && !service.isRunning()) {
      throw new Error(`${service.name} exited while waiting for ${what}:\n${service.output()}`);
    }
    if (Date.now() > deadline) {
      throw new Error(`${what}: not within ${timeoutMs} ms${service === undefined ? '' : `\n${service.name} said:\n${service.output()}`}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** pid and every descendant (a cluster primary's workers). */
export function processTree(pid: number): number[] {
  const out = [pid];
  const taskDir = `/proc/${pid}/task`;
  if (!existsSync(taskDir)) return out;
  for (const task of readdirSync(taskDir)) {
    let children = '';
    try {
      children = readFileSync(`${taskDir}/${task}/children`, 'utf8');
    } catch {
      continue;
    }
    for (const child of children.split(/\s+/).filter(Boolean)) out.push(...processTree(Number(child)));
  }
  return out;
}

/** VmRSS in MiB of pid and its descendants, each. */
export function rssMiB(pid: number): { pid: number; mib: number }[] {
  return processTree(pid).flatMap((p) => {
    try {
      const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${p}/status`, 'utf8'));
      return match ? [{ pid: p, mib: Math.round((Number(match[1]) / 1024) * 10) / 10 }] : [];
    } catch {
      return [];
    }
  });
}

/** Established TCP connections whose local end is `port` (the server side of loopback connections). */
export function connectionsTo(port: number): Promise<number> {
  // Asynchronous, so sampling does not stall the load generator's event loop.
  return new Promise((resolve) => {
    execFile('ss', ['-Htn', 'state', 'established', `( sport = :${port} )`], { encoding: 'utf8' }, (err, out) => {
      resolve(err ? -1 : out.split('\n').filter((line) => line.trim() !== '').length);
    });
  });
}

/** Samples connectionsTo(port) every 250 ms while `work` runs; resolves to the highest count seen. */
export async function peakConnections<T>(port: number, work: Promise<T>): Promise<[T, number]> {
  let peak = 0;
  const timer = setInterval(() => {
    void connectionsTo(port).then((n) => {
      peak = Math.max(peak, n);
    });
  }, 250);
  try {
    const value = await work;
    return [value, Math.max(peak, await connectionsTo(port))];
  } finally {
    clearInterval(timer);
  }
}

const TICKS_PER_SECOND = 100;

/**
 * CPU time (user + system) of pid and its descendants so far, in µs, from /proc/<pid>/stat.
 * Clock ticks are 10 ms: over a 10 s case at thousands of requests/s that is well under 1%.
 */
export function cpuMicros(pid: number): number {
  return processTree(pid).reduce((total, p) => {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      // The command name may hold spaces: fields are counted from after its closing parenthesis.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return total + ((Number(fields[11]) + Number(fields[12])) * 1_000_000) / TICKS_PER_SECOND;
    } catch {
      return total;
    }
  }, 0);
}
