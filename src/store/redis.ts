import Redis from 'ioredis';

/**
 * The store's Redis connection. Commands queue while Redis is away (a restart) instead of failing
 * the request at once; BullMQ needs `maxRetriesPerRequest: null` on its own connections.
 */
export function createRedis(url: string, options: { forBullmq?: boolean; name?: string; onError?: (err: Error) => void } = {}): Redis {
  const redis = new Redis(url, {
    maxRetriesPerRequest: options.forBullmq ? null : 3,
    enableAutoPipelining: !options.forBullmq,
    connectionName: options.name,
    retryStrategy: (times) => Math.min(50 * times, 1000),
  });
  // Connection errors also surface on commands; an unhandled 'error' event would crash the process.
  redis.on('error', options.onError ?? (() => undefined));
  return redis;
}

export async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status === 'end') return;
  try {
    await redis.quit();
  } catch {
    redis.disconnect();
  }
}

/** `maxmemory-policy` must be noeviction: an evicted job or record is lost money. */
export async function checkEvictionPolicy(redis: Redis): Promise<{ ok: boolean; policy: string }> {
  try {
    const reply = (await redis.config('GET', 'maxmemory-policy')) as string[];
    const policy = reply[1] ?? 'unknown';
    return { ok: policy === 'noeviction', policy };
  } catch {
    // CONFIG may be disabled on managed Redis; say so rather than guess.
    return { ok: false, policy: 'unknown (CONFIG GET refused)' };
  }
}

/** Whether a Redis answers PING at the URL within a second (used before starting one of our own). */
export async function redisAnswers(url: string): Promise<boolean> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}
