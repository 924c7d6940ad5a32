import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Child, tsEntry } from '../../src/lib/child';

/**
 * Runs `src/main/<entry>.ts` as `npm run demo`/`soak` would (node + tsx), collecting its output.
 * Soaks take turns (one at a time on this machine): each runs 2 gateways, 2 workers, Redis and the
 * simulator, and two at once on 2 cores time out wallet calls and health checks until the wallet
 * circuit breaker opens, which measures the box instead of the gateway.
 */
export async function runEntry(entry: 'demo' | 'soak', args: readonly string[]): Promise<EntryRun> {
  const release = entry === 'soak' ? await takeTurn('wgw-soak-turn') : () => undefined;
  try {
    const child = new Child({ name: entry, args: [...tsEntry(`src/main/${entry}.ts`), ...args], env: process.env });
    await child.start();
    const code = await child.exited;
    return { code, stdout: child.stdout(), output: child.output() };
  } finally {
    release();
  }
}

/** Each soak test's timeout: its own run and the runs it may wait for. */
export const SOAK_TEST_TIMEOUT_MS = 1_200_000;

/** A lock directory in the temp dir (mkdir is atomic); one left by a process that died is taken over. */
async function takeTurn(name: string): Promise<() => void> {
  const dir = join(tmpdir(), name);
  const owner = join(dir, 'pid');
  for (;;) {
    try {
      mkdirSync(dir);
      writeFileSync(owner, String(process.pid));
      return () => rmSync(dir, { recursive: true, force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    if (!alive(dir, owner)) rmSync(dir, { recursive: true, force: true });
    else await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

function alive(dir: string, pidFile: string): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(pidFile, 'utf8'));
  } catch {
    // Just made, its pid not written yet (or its maker died in between, long ago).
    try {
      return Date.now() - statSync(dir).mtimeMs < 10_000;
    } catch {
      return false;
    }
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export function lastLine(text: string): string {
  return text.trimEnd().split('\n').pop() ?? '';
}

export interface EntryRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly output: string;
}

/**
 * `npm run soak` with `args`, once more when the first run could not be carried out because a
 * wait of the harness itself ran out (exit 2, `waiting for …`: a failover the sentinels had not
 * finished, a process not healthy in time on a loaded box). That says nothing about money, and the
 * first run's reason is written to stderr. A run that finished is never repeated: its lost,
 * doubled, drift and differences stand.
 */
export async function runSoak(args: readonly string[]): Promise<EntryRun> {
  const first = await runEntry('soak', args);
  if (first.code !== 2 || !/failed: (Error: )?waiting for /.test(first.output)) return first;
  process.stderr.write(`[soak] not carried out, run once more:\n${failureOf(first)}\n`);
  return runEntry('soak', args);
}

/** '' for a run that exited 0; else the exit code and the run's own failure message first, then the output's end. */
export function failureOf(run: EntryRun): string {
  if (run.code === 0) return '';
  const at = run.output.search(/(soak|demo) failed: /);
  const reason = at < 0 ? '(no failure message)' : run.output.slice(at, at + 800);
  return `exit ${run.code}: ${reason}\n--- the output's end ---\n${run.output.slice(-1500)}`;
}
