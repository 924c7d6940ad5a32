import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../lib/free-port';
import { redisAnswers } from '../store/redis';

/**
 * Redis for `npm run dev`: the one at REDIS_URL when it answers, else a redis-server of its own on
 * a free loopback port, with its append-only file under a data folder so the dev state survives a
 * restart. The same settings as production (docs/operators.md): AOF everysec, noeviction.
 */
export interface DevRedis {
  readonly url: string;
  /** True when this process started the redis-server (and stop() ends it). */
  readonly started: boolean;
  readonly dataDir: string | undefined;
  stop(): Promise<void>;
}

/** Nothing answers at the URL and no redis-server could be started: the message says what to do. */
export class RedisUnavailableError extends Error {
  override readonly name = 'RedisUnavailableError';
}

const START_DEADLINE_MS = 10_000;
const STOP_DEADLINE_MS = 10_000;

function howToGetRedis(url: string, why: string): string {
  return [
    `Redis does not answer at ${url} and ${why}. Any one of these works:`,
    '  - install redis-server (Debian/Ubuntu: apt-get install redis-server, macOS: brew install redis);',
    '    npm run dev then starts one itself, with its data under .data/redis/',
    '  - point REDIS_URL at a Redis that answers: REDIS_URL=redis://host:6379 npm run dev',
    "  - run the project's compose Redis with its port on loopback:",
    '    docker compose run -d --name wgw-dev-redis -p 127.0.0.1:6379:6379 redis',
  ].join('\n');
}

/** A private redis-server; resolves once it answers PING. */
async function startRedisServer(dataDir: string, url: string): Promise<DevRedis> {
  mkdirSync(dataDir, { recursive: true });
  const port = await freePort();
  const own = `redis://127.0.0.1:${port}`;
  const args = [
    '--port', String(port),
    '--bind', '127.0.0.1',
    '--dir', dataDir,
    '--logfile', join(dataDir, 'redis.log'),
    '--appendonly', 'yes',
    '--appendfsync', 'everysec',
    '--save', '',
    '--maxmemory-policy', 'noeviction',
  ];
  // Its own process group: a Ctrl-C at the terminal goes to dev alone, which stops Redis last.
  const child = spawn('redis-server', args, { stdio: 'ignore', detached: true });
  const spawned = await new Promise<Error | undefined>((resolve) => {
    child.once('spawn', () => resolve(undefined));
    child.once('error', (err) => resolve(err));
  });
  if (spawned) {
    const missing = (spawned as NodeJS.ErrnoException).code === 'ENOENT';
    throw new RedisUnavailableError(howToGetRedis(url, missing ? 'redis-server is not on the PATH' : `redis-server did not start (${spawned.message})`));
  }
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // Should dev die without its shutdown (an uncaught error), the server must not outlive it.
  const killOnExit = (): void => {
    child.kill('SIGTERM');
  };
  process.once('exit', killOnExit);

  const deadline = Date.now() + START_DEADLINE_MS;
  while (!(await redisAnswers(own))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      process.off('exit', killOnExit);
      throw new RedisUnavailableError(howToGetRedis(url, `the redis-server started on port ${port} did not answer (see ${join(dataDir, 'redis.log')})`));
    }
    await new Promise((r) => setTimeout(r, 50));
  }

  let stopping: Promise<void> | undefined;
  return {
    url: own,
    started: true,
    dataDir,
    stop() {
      stopping ??= (async () => {
        process.off('exit', killOnExit);
        if (child.exitCode !== null || child.signalCode !== null) return;
        // SIGTERM: Redis flushes the AOF and exits cleanly.
        child.kill('SIGTERM');
        const cut = setTimeout(() => child.kill('SIGKILL'), STOP_DEADLINE_MS);
        await exited;
        clearTimeout(cut);
      })();
      return stopping;
    },
  };
}

/** The Redis at `url` when it answers; otherwise a redis-server of our own with its data in `dataDir`. */
export async function ensureDevRedis(url: string, dataDir: string): Promise<DevRedis> {
  if (await redisAnswers(url)) return { url, started: false, dataDir: undefined, stop: async () => undefined };
  return startRedisServer(dataDir, url);
}
