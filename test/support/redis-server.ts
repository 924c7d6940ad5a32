import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../src/lib/free-port';
import { redisAnswers } from '../../src/store/redis';

export interface RunningRedis {
  url: string;
  /** The child we started, if we started one. */
  process?: ChildProcess;
  stop(): Promise<void>;
}

export interface StartRedisOptions {
  port?: number;
  dir?: string;
  /** Extra redis-server arguments, e.g. ['--appendonly', 'yes', '--appendfsync', 'always']. */
  args?: string[];
}

/** Starts a private redis-server and resolves once it answers PING. */
export async function startRedis(options: StartRedisOptions = {}): Promise<RunningRedis> {
  const port = options.port ?? (await freePort());
  const ownDir = options.dir === undefined;
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'wgw-redis-'));
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', ...(options.args ?? [])];
  const child = spawn('redis-server', args, { stdio: 'ignore' });
  const url = `redis://127.0.0.1:${port}`;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + 10_000;
  while (!(await redisAnswers(url))) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}`);
    if (Date.now() > deadline) throw new Error('redis-server did not answer within 10 s');
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url,
    process: child,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
      if (ownDir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function ensureRedis(url: string): Promise<RunningRedis> {
  if (await redisAnswers(url)) return { url, stop: async () => undefined };
  return startRedis();
}
