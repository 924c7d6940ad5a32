import { execFile } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';

/**
 * What the bench reads about its processes from /proc and ss: the process tree of a server (a
 * cluster primary and its workers), its RSS and CPU time, and its open connections. The processes
 * themselves are lib/child's.
 */
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

/** Counters read from /proc/<p>/<file>, summed over pid and its descendants; a process gone meanwhile adds nothing. */
function sumOverTree<T extends Record<string, number>>(pid: number, file: string, zero: T, read: (text: string) => T): T {
  const total: Record<string, number> = { ...zero };
  for (const p of processTree(pid)) {
    let counters: T;
    try {
      counters = read(readFileSync(`/proc/${p}/${file}`, 'utf8'));
    } catch {
      continue;
    }
    for (const key of Object.keys(zero)) total[key] = (total[key] ?? 0) + (counters[key] ?? 0);
  }
  return total as T;
}

/** CPU time of a process tree so far, in µs, split by where it ran. */
export interface CpuTime {
  readonly user: number;
  readonly system: number;
}

/**
 * CPU time (user and system) of pid and its descendants so far, in µs, from /proc/<pid>/stat.
 * Clock ticks are 10 ms: over a 10 s case at thousands of requests/s that is well under 1%.
 */
export function cpuTime(pid: number): CpuTime {
  return sumOverTree(pid, 'stat', { user: 0, system: 0 }, (stat) => {
    // The command name may hold spaces: fields are counted from after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const micros = (ticks: string | undefined): number => (Number(ticks) * 1_000_000) / TICKS_PER_SECOND;
    return { user: micros(fields[11]), system: micros(fields[12]) };
  });
}

/** User + system CPU time of pid and its descendants so far, in µs. */
export function cpuMicros(pid: number): number {
  const { user, system } = cpuTime(pid);
  return user + system;
}

/** Read and write system calls and the bytes they moved, of pid and its descendants (/proc/<pid>/io). */
export interface IoCounters {
  readonly reads: number;
  readonly writes: number;
  readonly bytesRead: number;
  readonly bytesWritten: number;
}

export function ioCounters(pid: number): IoCounters {
  return sumOverTree(pid, 'io', { reads: 0, writes: 0, bytesRead: 0, bytesWritten: 0 }, (io) => {
    const field = (name: string): number => Number(new RegExp(`^${name}: (\\d+)`, 'm').exec(io)?.[1] ?? 0);
    return { reads: field('syscr'), writes: field('syscw'), bytesRead: field('rchar'), bytesWritten: field('wchar') };
  });
}
