import Redis from 'ioredis';

/**
 * Which Redis the gateway runs on (contract 9): one Redis at a URL, or the primary a set of
 * sentinels name (ioredis's own Sentinel support: it asks them for the primary at every connect).
 */
export type RedisTarget =
  | { readonly kind: 'url'; readonly url: string }
  | {
      readonly kind: 'sentinel';
      readonly sentinels: readonly { readonly host: string; readonly port: number }[];
      readonly name: string;
      /** From REDIS_URL's user and password, if it has them: the primary's credentials. */
      readonly username?: string;
      readonly password?: string;
    };

export interface RedisSettings {
  readonly REDIS_URL: string;
  readonly REDIS_SENTINELS?: readonly { readonly host: string; readonly port: number }[];
  readonly REDIS_SENTINEL_NAME?: string;
}

export function redisTargetOf(settings: RedisSettings): RedisTarget {
  if (settings.REDIS_SENTINELS === undefined || settings.REDIS_SENTINEL_NAME === undefined) return { kind: 'url', url: settings.REDIS_URL };
  const url = new URL(settings.REDIS_URL);
  return {
    kind: 'sentinel',
    sentinels: settings.REDIS_SENTINELS,
    name: settings.REDIS_SENTINEL_NAME,
    username: url.username === '' ? undefined : decodeURIComponent(url.username),
    password: url.password === '' ? undefined : decodeURIComponent(url.password),
  };
}

/**
 * After a failover the old primary comes back as a replica: a connection still on it gets
 * READONLY for a write that was therefore not done; reconnect (to the primary the sentinels name
 * now) and send the command again.
 */
function reconnectOnReadonly(err: Error): 2 | false {
  return err.message.startsWith('READONLY') ? 2 : false;
}

/**
 * The store's Redis connection. Commands queue while Redis is away (a restart, a failover) instead
 * of failing the request at once; BullMQ needs `maxRetriesPerRequest: null` on its own connections.
 * Scripts are sent by SHA1 and reloaded on NOSCRIPT (a promoted replica has none cached).
 */
export function createRedis(target: RedisTarget | string, options: { forBullmq?: boolean; name?: string; onError?: (err: Error) => void } = {}): Redis {
  const common = {
    maxRetriesPerRequest: options.forBullmq ? null : 3,
    enableAutoPipelining: !options.forBullmq,
    connectionName: options.name,
    retryStrategy: (times: number) => Math.min(50 * times, 1000),
  };
  const t: RedisTarget = typeof target === 'string' ? { kind: 'url', url: target } : target;
  const redis =
    t.kind === 'url'
      ? new Redis(t.url, common)
      : new Redis({
          ...common,
          sentinels: t.sentinels.map((a) => ({ host: a.host, port: a.port })),
          name: t.name,
          username: t.username,
          password: t.password,
          // Sentinel's +switch-master ends the connection to the old primary at once, rather than
          // when its socket times out.
          failoverDetector: true,
          reconnectOnError: reconnectOnReadonly,
          sentinelRetryStrategy: (times: number) => Math.min(100 * times, 1000),
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

/** The node a connection is on now and whether it says it is the primary (`ROLE`), for /readyz. */
export async function primaryOf(redis: Redis): Promise<{ readonly address: string; readonly isPrimary: boolean }> {
  const [role] = (await redis.role()) as [string, ...unknown[]];
  return { address: `${redis.stream.remoteAddress ?? '?'}:${redis.stream.remotePort ?? '?'}`, isPrimary: role === 'master' };
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
