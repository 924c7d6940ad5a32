import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

/** A TypeScript entry run as one child process through tsx (no build needed), its output collected. */
export interface Child {
  readonly process: ChildProcess;
  /** stdout + stderr so far (pino JSON lines). */
  output(): string;
  /** Resolves once a line containing `text` was printed. */
  waitForOutput(text: string, timeoutMs?: number): Promise<void>;
  /** Resolves with the exit code (null after a signal). */
  readonly exited: Promise<number | null>;
  kill(signal: NodeJS.Signals): Promise<number | null>;
}

const ROOT = join(__dirname, '..', '..');

export function spawnEntry(entry: string, env: Record<string, string>): Child {
  // `node --import tsx` runs the entry in this one process: the tsx CLI would put the program in a
  // grandchild that a SIGKILL of the CLI leaves running.
  const child = spawn(process.execPath, ['--import', 'tsx', entry], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  const waiters: { needle: string; resolve: () => void }[] = [];
  const onData = (chunk: Buffer): void => {
    text += chunk.toString('utf8');
    for (const w of [...waiters]) {
      if (text.includes(w.needle)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    process: child,
    output: () => text,
    exited,
    waitForOutput(needle, timeoutMs = 20_000) {
      if (text.includes(needle)) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no "${needle}" from ${entry} within ${timeoutMs} ms:\n${text.slice(-2000)}`)), timeoutMs);
        void exited.then((code) => {
          clearTimeout(timer);
          reject(new Error(`${entry} exited (${code}) before printing "${needle}":\n${text.slice(-2000)}`));
        });
        waiters.push({ needle, resolve: () => (clearTimeout(timer), resolve()) });
      });
    },
    async kill(signal) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** Starts `npm run worker`'s entry (workers/main.ts) and waits until it took its queues. */
export async function startWorkerProcess(env: Record<string, string>): Promise<Child> {
  const child = spawnEntry('workers/main.ts', { ...env, LOG_LEVEL: 'info' });
  await child.waitForOutput('"msg":"worker started"');
  return child;
}
