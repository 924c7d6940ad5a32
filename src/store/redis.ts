import Redis, { Cluster } from 'ioredis';

/** A store or queue connection: one Redis (URL or Sentinel) or a Redis Cluster. */
export type RedisClient = Redis | Cluster;

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
    }
  | {
      /** A Redis Cluster: any of its nodes to start from (ioredis's own Cluster client learns the rest). */
      readonly kind: 'cluster';
      readonly nodes: readonly { readonly host: string; readonly port: number }[];
      readonly username?: string;
      readonly password?: string;
    };

export interface RedisSettings {
  readonly REDIS_URL: string;
  readonly REDIS_SENTINELS?: readonly { readonly host: string; readonly port: number }[];
  readonly REDIS_SENTINEL_NAME?: string;
  readonly REDIS_CLUSTER_NODES?: readonly { readonly host: string; readonly port: number }[];
}

export function redisTargetOf(settings: RedisSettings): RedisTarget {
  const url = new URL(settings.REDIS_URL);
  const credentials = {
    username: url.username === '' ? undefined : decodeURIComponent(url.username),
    password: url.password === '' ? undefined : decodeURIComponent(url.password),
  };
  if (settings.REDIS_CLUSTER_NODES !== undefined) return { kind: 'cluster', nodes: settings.REDIS_CLUSTER_NODES, ...credentials };
  if (settings.REDIS_SENTINELS === undefined || settings.REDIS_SENTINEL_NAME === undefined) return { kind: 'url', url: settings.REDIS_URL };
  return { kind: 'sentinel', sentinels: settings.REDIS_SENTINELS, name: settings.REDIS_SENTINEL_NAME, ...credentials };
}

/** Whether keys need hash tags: on a cluster every multi-key step must stay in one slot. */
export function isClusterTarget(target: RedisTarget): boolean {
  return target.kind === 'cluster';
}

/**
 * After a failover the old primary comes back as a replica: a connection still on it gets
 * READONLY for a write that was therefore not done; reconnect (to the primary the sentinels name
 * now) and send the command again.
 */
function reconnectOnReadonly(err: Error): 2 | false {
  return err.message.startsWith('READONLY') ? 2 : false;
}

export interface ConnectionOptions {
  readonly forBullmq?: boolean;
  readonly name?: string;
  readonly onError?: (err: Error) => void;
}

/**
 * The store's Redis connection. Commands queue while Redis is away (a restart, a failover) instead
 * of failing the request at once; BullMQ needs `maxRetriesPerRequest: null` on its own connections.
 * Scripts are sent by SHA1 and reloaded on NOSCRIPT (a promoted replica has none cached).
 */
export function createRedis(target: Exclude<RedisTarget, { kind: 'cluster' }> | string, options?: ConnectionOptions): Redis;
export function createRedis(target: RedisTarget | string, options?: ConnectionOptions): RedisClient;
export function createRedis(target: RedisTarget | string, options: ConnectionOptions = {}): RedisClient {
  const common = {
    maxRetriesPerRequest: options.forBullmq ? null : 3,
    enableAutoPipelining: !options.forBullmq,
    connectionName: options.name,
    retryStrategy: (times: number) => Math.min(50 * times, 1000),
  };
  const t: RedisTarget = typeof target === 'string' ? { kind: 'url', url: target } : target;
  if (t.kind === 'cluster') return createCluster(t, common, options.onError);
  const redis =
    t.kind === 'url'
      ? new Redis(t.url, common)
      : new Redis({
          ...common,
          sentinels: t.sentinels.map((a) => ({ host: a.host, port: a.port })),
          name: t.name,
          username: t.username,
          password: t.password,
          // No failover detector: ioredis 5's detector, on Sentinel's +switch-master, disconnects
          // its connector even while that connector is still asking the sentinels for the primary
          // after a lost connection; the connect then fails with "Connection is closed." and the
          // client ends for good (the sentinel soak's seed 101: every request of both gateways
          // failed from the second failover on). A killed primary's socket closes by itself, and
          // a demoted one answers writes READONLY, which reconnects (below).
          reconnectOnError: reconnectOnReadonly,
          sentinelRetryStrategy: (times: number) => Math.min(100 * times, 1000),
        });
  // Connection errors also surface on commands; an unhandled 'error' event would crash the process.
  redis.on('error', options.onError ?? (() => undefined));
  return redis;
}

/**
 * ioredis's own Cluster client: it follows MOVED/ASK, refreshes the slot map after a failover
 * (a killed master's replica takes its slots), and its defineCommand scripts reload on NOSCRIPT at
 * whichever master a slot moved to. Commands queue while no node owns a slot yet.
 */
function createCluster(
  t: Extract<RedisTarget, { kind: 'cluster' }>,
  common: { maxRetriesPerRequest: number | null; connectionName?: string },
  onError: ((err: Error) => void) | undefined,
): Cluster {
  const cluster = new Cluster(
    t.nodes.map((n) => ({ host: n.host, port: n.port })),
    {
      // Off on a cluster: an auto-pipeline that mixes a MOVED (a failover) or a NOSCRIPT (a promoted
      // replica) with other replies hands that error to the caller instead of following it; a
      // command sent on its own is redirected, retried, and its script reloaded by ioredis.
      enableAutoPipelining: false,
      clusterRetryStrategy: (times: number) => Math.min(100 * times, 1000),
      // A failover takes the cluster-node-timeout and an election: keep a command's redirections
      // and retries going for that long rather than failing the request.
      maxRedirections: 64,
      retryDelayOnFailover: 200,
      retryDelayOnClusterDown: 200,
      retryDelayOnTryAgain: 200,
      slotsRefreshTimeout: 2000,
      redisOptions: {
        maxRetriesPerRequest: common.maxRetriesPerRequest,
        connectionName: common.connectionName,
        username: t.username,
        password: t.password,
        reconnectOnError: reconnectOnReadonly,
      },
    },
  );
  cluster.on('error', onError ?? (() => undefined));
  return cluster;
}

export async function closeRedis(redis: RedisClient): Promise<void> {
  if (redis.status === 'end') return;
  try {
    await redis.quit();
  } catch {
    redis.disconnect();
  }
}

/** `maxmemory-policy` must be noeviction: an evicted job or record is lost money. */
export async function checkEvictionPolicy(redis: RedisClient): Promise<{ ok: boolean; policy: string }> {
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
