import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { Child, baseEnv } from './child';
import { freeClusterNodePort, freePort } from './free-port';
import { waitFor } from './wait-for';

/**
 * The one redis-server spawner (the tests' private Redis, `npm run dev`'s, the soak's and the
 * bench's): a child process on a loopback port, ready once it answers PING. `kill()` is the fault
 * (SIGKILL, no warning) and `start()` again comes back on the same port and data directory, with
 * what its AOF kept; `stop()` is the clean end (SIGTERM: Redis flushes the AOF and exits).
 */
export interface RedisServerOptions {
  /** Default: a free port. */
  readonly port?: number;
  /** Data directory; default a temporary one, deleted by stop(). */
  readonly dir?: string;
  /** Append-only file and its fsync policy; default off (nothing survives a kill). */
  readonly aof?: 'always' | 'everysec' | 'off';
  /** Where its log goes; default redis.log in the data directory. */
  readonly logFile?: string;
  /** Starts as a replica of this primary (Sentinel may later promote it or point it elsewhere). */
  readonly replicaOf?: { readonly host: string; readonly port: number };
  /** A Redis Cluster node (its nodes.conf in the data directory); a node silent this long is failing. */
  readonly cluster?: { readonly nodeTimeoutMs: number };
  /** Runs redis-server under this command (a bench's `valgrind --tool=callgrind`); its pid is then the launcher's. */
  readonly launcher?: readonly string[];
}

/** How long a start may take: with a large AOF, PING answers LOADING while it is replayed. */
const START_TIMEOUT_MS = 30_000;
const STOP_GRACE_MS = 10_000;

export class RedisServer {
  readonly url: string;
  readonly port: number;
  readonly dir: string;
  private readonly child: Child;
  private readonly ownDir: boolean;

  private constructor(port: number, options: RedisServerOptions) {
    this.ownDir = options.dir === undefined;
    this.dir = options.dir ?? mkdtempSync(join(tmpdir(), 'wgw-redis-'));
    mkdirSync(this.dir, { recursive: true });
    const aof = options.aof ?? 'off';
    const persistence = aof === 'off' ? ['--appendonly', 'no'] : ['--appendonly', 'yes', '--appendfsync', aof];
    // The production settings (docs/operators.md): no RDB snapshots, noeviction.
    const replica = options.replicaOf === undefined ? [] : ['--replicaof', options.replicaOf.host, String(options.replicaOf.port)];
    const cluster =
      options.cluster === undefined
        ? []
        : ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', String(options.cluster.nodeTimeoutMs)];
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', this.dir, '--save', '', '--maxmemory-policy', 'noeviction', ...persistence, ...replica, ...cluster];
    this.port = port;
    this.url = `redis://127.0.0.1:${port}`;
    this.child = new Child({
      name: 'redis-server',
      command: options.launcher?.[0] ?? 'redis-server',
      args: options.launcher === undefined ? args : [...options.launcher.slice(1), 'redis-server', ...args],
      env: baseEnv(),
      logFile: options.logFile ?? join(this.dir, 'redis.log'),
      // A parent that dies without its stop: Redis still flushes what it has.
      parentExitSignal: 'SIGTERM',
    });
  }

  /** The redis-server process (for a bench to read its CPU time). */
  get pid(): number {
    return this.child.pid;
  }

  /** Starts a redis-server and resolves once it answers PING. */
  static async start(options: RedisServerOptions = {}): Promise<RedisServer> {
    const server = new RedisServer(options.port ?? (options.cluster === undefined ? await freePort() : await freeClusterNodePort()), options);
    try {
      await server.start();
    } catch (err) {
      await server.stop();
      throw err;
    }
    return server;
  }

  /** How many times it came back after the first start. */
  get restarts(): number {
    return Math.max(0, this.child.starts - 1);
  }

  /** Starts it (again, after kill()) and resolves once it answers PING; rejects with ENOENT without redis-server. */
  async start(): Promise<void> {
    await this.child.start();
    await waitFor('redis-server answering PING', () => redisAnswers(this.url), START_TIMEOUT_MS, {
      intervalMs: 50,
      alive: () => this.child.isRunning(),
      context: () => `${this.url}, log ${this.child.options.logFile ?? ''}:\n${this.child.output(2000)}`,
    });
  }

  /** Resolves once `count` replicas are attached and in sync (INFO replication says `state=online`). */
  async waitForReplicas(count: number, timeoutMs = START_TIMEOUT_MS): Promise<void> {
    const client = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0 });
    client.on('error', () => undefined);
    try {
      await waitFor(`${count} replicas online at ${this.url}`, async () => onlineReplicas(await client.info('replication')) >= count, timeoutMs, { intervalMs: 50 });
    } finally {
      client.disconnect();
    }
  }

  /** SIGKILL, no warning: the fault. */
  async kill(): Promise<void> {
    await this.child.kill('SIGKILL');
  }

  async restart(): Promise<void> {
    await this.kill();
    await this.start();
  }

  /** SIGTERM (the AOF is flushed), SIGKILL after `graceMs`; a temporary data directory is deleted. */
  async stop(graceMs = STOP_GRACE_MS): Promise<void> {
    await this.child.stop(graceMs);
    if (this.ownDir) rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A Redis to use: the one at `url` when it answers, else a redis-server started here. */
export interface AvailableRedis {
  readonly url: string;
  /** The server started here; undefined when the one at the URL answered. */
  readonly server: RedisServer | undefined;
  /** Stops the server started here; nothing for the one at the URL. */
  stop(): Promise<void>;
}

export async function ensureRedis(url: string, options: RedisServerOptions = {}): Promise<AvailableRedis> {
  if (await redisAnswers(url)) return { url, server: undefined, stop: async () => undefined };
  const server = await RedisServer.start(options);
  return { url: server.url, server, stop: () => server.stop() };
}

/** The one node of a topology killed on purpose (a failover's victim), until it is started again. */
export class KilledNode {
  private node: RedisServer | undefined;

  /** SIGKILLs `server` and remembers it. */
  async kill(server: RedisServer): Promise<void> {
    await server.kill();
    this.node = server;
  }

  is(server: RedisServer): boolean {
    return server === this.node;
  }

  /** Starts the killed node again; false when none was down. */
  async restart(): Promise<boolean> {
    const node = this.node;
    if (node === undefined) return false;
    await node.start();
    this.node = undefined;
    return true;
  }
}

/** How many replicas an `INFO replication` answer lists as online. */
export function onlineReplicas(replicationInfo: string): number {
  return replicationInfo.split('state=online').length - 1;
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

/** One short-lived connection to a loopback Redis on `port` for one question (the topologies' probes). */
export async function askRedis<T>(port: number, command: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await command(client);
  } finally {
    client.disconnect();
  }
}
