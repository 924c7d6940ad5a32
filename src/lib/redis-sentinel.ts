import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Child, baseEnv } from './child';
import { freePort } from './free-port';
import { KilledNode, RedisServer, askRedis as ask, onlineReplicas } from './redis-server';
import { waitFor } from './wait-for';

/**
 * A Sentinel-managed Redis on loopback for the soak and the tests: a primary, its replicas and a
 * quorum of sentinels, each on a free port. `killPrimary()` is
 * the fault: SIGKILL of whichever node is the primary now, resolved once the sentinels promoted a
 * replica; `restart()` brings the killed node back, as a replica the sentinels point at the new primary.
 */
export interface SentinelTopologyOptions {
  readonly replicas?: number;
  readonly sentinels?: number;
  /** The primary's name at the sentinels (REDIS_SENTINEL_NAME). */
  readonly name?: string;
  readonly aof?: 'always' | 'everysec' | 'off';
  /** Data and logs; default a temporary directory, deleted by stop(). */
  readonly dir?: string;
}

// A failed election is tried again only after 2 × failover-timeout (10 s here), and a loaded box
// can need more than one try: the Cluster topology's 60 s, not 30.
const FAILOVER_TIMEOUT_MS = 60_000;
const START_TIMEOUT_MS = 30_000;

/** Fast enough for a soak: a primary silent for 1 s is down; a failover may take 5 s before another try. */
function sentinelConfig(port: number, dir: string, name: string, primaryPort: number, quorum: number): string {
  return [
    `port ${port}`,
    'bind 127.0.0.1',
    `dir ${dir}`,
    `sentinel monitor ${name} 127.0.0.1 ${primaryPort} ${quorum}`,
    `sentinel down-after-milliseconds ${name} 1000`,
    `sentinel failover-timeout ${name} 5000`,
    `sentinel parallel-syncs ${name} 2`,
    '',
  ].join('\n');
}


export class SentinelTopology {
  /** The last node killed by killPrimary(), until restart() brought it back. */
  private readonly down = new KilledNode();

  private constructor(
    readonly name: string,
    readonly servers: readonly RedisServer[],
    private readonly sentinels: readonly { readonly port: number; readonly child: Child }[],
    private readonly dir: string,
    private readonly ownDir: boolean,
  ) {}

  /** REDIS_SENTINELS for the gateway and the workers. */
  get sentinelAddresses(): string {
    return this.sentinels.map((s) => `127.0.0.1:${s.port}`).join(',');
  }

  static async start(options: SentinelTopologyOptions = {}): Promise<SentinelTopology> {
    const name = options.name ?? 'wgw-primary';
    const ownDir = options.dir === undefined;
    const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'wgw-sentinel-'));
    const servers: RedisServer[] = [];
    const sentinels: { port: number; child: Child }[] = [];
    const topology = new SentinelTopology(name, servers, sentinels, dir, ownDir);
    try {
      const primary = await RedisServer.start({ aof: options.aof, dir: join(dir, 'redis-1') });
      servers.push(primary);
      for (let i = 0; i < (options.replicas ?? 2); i += 1) {
        servers.push(await RedisServer.start({ aof: options.aof, dir: join(dir, `redis-${i + 2}`), replicaOf: { host: '127.0.0.1', port: primary.port } }));
      }
      await primary.waitForReplicas(servers.length - 1);
      const count = options.sentinels ?? 3;
      for (let i = 0; i < count; i += 1) {
        const port = await freePort();
        const own = join(dir, `sentinel-${i + 1}`);
        mkdirSync(own, { recursive: true });
        // Sentinel rewrites its configuration file as it learns the topology: it must be its own, writable.
        const file = join(own, 'sentinel.conf');
        writeFileSync(file, sentinelConfig(port, own, name, primary.port, Math.floor(count / 2) + 1));
        // `redis-server --sentinel` is what `redis-sentinel` runs: every Redis install has it, while
        // Debian ships the `redis-sentinel` name as a package of its own.
        const child = new Child({ name: `redis-sentinel-${i + 1}`, command: 'redis-server', args: [file, '--sentinel'], env: baseEnv(), logFile: join(own, 'sentinel.log'), parentExitSignal: 'SIGTERM' });
        sentinels.push({ port, child });
        await child.start();
      }
      // Ready once every sentinel knows the replicas and the other sentinels: a failover needs both.
      await waitFor(
        'the sentinels to know the replicas and each other',
        async () => {
          for (const s of sentinels) {
            const info = await ask(s.port, (c) => c.call('SENTINEL', 'MASTER', name) as Promise<string[]>);
            const field = (key: string): number => Number(info[info.indexOf(key) + 1]);
            if (field('num-slaves') < servers.length - 1 || field('num-other-sentinels') < count - 1) return false;
          }
          return true;
        },
        START_TIMEOUT_MS,
        { intervalMs: 100 },
      );
    } catch (err) {
      await topology.stop();
      throw err;
    }
    return topology;
  }

  /** The primary the sentinels name now (host:port). */
  async primaryAddress(): Promise<string> {
    for (const s of this.sentinels) {
      try {
        const [host, port] = await ask(s.port, (c) => c.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', this.name) as Promise<[string, string]>);
        return `${host}:${port}`;
      } catch {
        // The next sentinel.
      }
    }
    throw new Error('no sentinel answered');
  }

  async primary(): Promise<RedisServer> {
    const address = await this.primaryAddress();
    const server = this.servers.find((s) => `127.0.0.1:${s.port}` === address);
    if (server === undefined) throw new Error(`the sentinels name ${address}, which is none of the topology's servers`);
    return server;
  }

  /** SIGKILL of the current primary; resolves once the sentinels promoted a replica and it says it is the primary. */
  async killPrimary(): Promise<{ readonly killed: string; readonly promoted: string }> {
    const victim = await this.primary();
    const killed = `127.0.0.1:${victim.port}`;
    await this.down.kill(victim);
    const promoted = await waitFor(
      `a replica promoted after ${killed} was killed`,
      async () => {
        const address = await this.primaryAddress();
        if (address === killed) return false;
        const role = await ask(Number(address.split(':')[1]), (c) => c.role() as Promise<string[]>);
        return role[0] === 'master' ? address : false;
      },
      FAILOVER_TIMEOUT_MS,
      { intervalMs: 100 },
    );
    return { killed, promoted };
  }

  /**
   * The node killPrimary() killed comes back; resolves once the primary the sentinels name has every
   * other node online as its replica. The primary is asked for afresh on every poll: the sentinels
   * may fail over again meanwhile (a just-promoted primary silent for a second is "down" too), and
   * the one named before would then never see its replicas.
   */
  async restart(): Promise<void> {
    if (!(await this.down.restart())) return;
    const replicas = this.servers.length - 1;
    await waitFor(
      `${replicas} replicas online at the primary the sentinels name`,
      async () => onlineReplicas(await ask((await this.primary()).port, (c) => c.info('replication'))) >= replicas,
      FAILOVER_TIMEOUT_MS,
      { intervalMs: 100 },
    );
  }

  async stop(): Promise<void> {
    await Promise.all(this.sentinels.map((s) => s.child.stop(2000)));
    await Promise.all(this.servers.map((s) => s.stop(2000)));
    if (this.ownDir) rmSync(this.dir, { recursive: true, force: true });
  }
}
