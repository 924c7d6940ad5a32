import { ensureRedis } from '../lib/redis-server';

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

/** The Redis at `url` when it answers; otherwise a redis-server of our own with its data in `dataDir`. */
export async function ensureDevRedis(url: string, dataDir: string): Promise<DevRedis> {
  try {
    const redis = await ensureRedis(url, { dir: dataDir, aof: 'everysec' });
    return { url: redis.url, started: redis.server !== undefined, dataDir: redis.server?.dir, stop: () => redis.stop() };
  } catch (err) {
    const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
    throw new RedisUnavailableError(howToGetRedis(url, missing ? 'redis-server is not on the PATH' : `the redis-server started here did not answer (${(err as Error).message})`));
  }
}
