import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Child, baseEnv } from './child';
import { KilledNode, RedisServer, askRedis as ask } from './redis-server';
import { waitFor } from './wait-for';

/**
 * A Redis Cluster on loopback for the soak, the tests and the bench: `masters` masters with one
 * replica each, every node a redis-server on a free port, built with `redis-cli --cluster create`
 * (equal contiguous slot ranges). `killMaster()` is the fault: SIGKILL of a master, resolved once
 * the cluster promoted its replica and says `cluster_state:ok` again; `restart()` brings the killed
 * node back, where it rejoins as a replica of the promoted one.
 */
export interface ClusterTopologyOptions {
  readonly masters?: number;
  readonly aof?: 'always' | 'everysec' | 'off';
  /** cluster-node-timeout: a master silent this long is failed over. */
  readonly nodeTimeoutMs?: number;
  /** Data and logs; default a temporary directory, deleted by stop(). */
  readonly dir?: string;
}

const FAILOVER_TIMEOUT_MS = 60_000;
const START_TIMEOUT_MS = 60_000;


/** One line of CLUSTER NODES: the node's address, its flags, and the slots it serves. */
interface NodeLine {
  readonly address: string;
  readonly flags: readonly string[];
  readonly slots: number;
}

function parseNodes(text: string): NodeLine[] {
  return text
    .trim()
    .split('\n')
    .map((line) => {
      const [, address = '', flags = '', , , , , , ...ranges] = line.split(' ');
      const slots = ranges.reduce((n, r) => {
        if (r.startsWith('[')) return n;
        const [from, to] = r.split('-').map(Number) as [number, number?];
        return n + (to === undefined ? 1 : to - from + 1);
      }, 0);
      return { address: address.split('@')[0] ?? '', flags: flags.split(','), slots };
    });
}

export class ClusterTopology {
  /** The last node killed by killMaster(), until restart() brought it back. */
  private readonly down = new KilledNode();
  private kills = 0;

  private constructor(
    readonly servers: readonly RedisServer[],
    private readonly dir: string,
    private readonly ownDir: boolean,
  ) {}

  /** REDIS_CLUSTER_NODES for the gateway and the workers. */
  get nodeAddresses(): string {
    return this.servers.map((s) => `127.0.0.1:${s.port}`).join(',');
  }

  static async start(options: ClusterTopologyOptions = {}): Promise<ClusterTopology> {
    const ownDir = options.dir === undefined;
    const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'wgw-cluster-'));
    const servers: RedisServer[] = [];
    const topology = new ClusterTopology(servers, dir, ownDir);
    try {
      const masters = options.masters ?? 3;
      for (let i = 0; i < masters * 2; i += 1) {
        servers.push(await RedisServer.start({ aof: options.aof, dir: join(dir, `node-${i + 1}`), cluster: { nodeTimeoutMs: options.nodeTimeoutMs ?? 2000 } }));
      }
      // The first `masters` addresses become the masters, the rest their replicas.
      const create = new Child({
        name: 'redis-cli-cluster-create',
        command: 'redis-cli',
        args: ['--cluster', 'create', ...servers.map((s) => `127.0.0.1:${s.port}`), '--cluster-replicas', '1', '--cluster-yes'],
        env: baseEnv(),
        logFile: join(dir, 'cluster-create.log'),
      });
      await create.start();
      await waitFor('redis-cli --cluster create to finish', async () => !create.isRunning(), START_TIMEOUT_MS, { intervalMs: 100, context: () => create.output(4000) });
      await topology.waitHealthy(masters, START_TIMEOUT_MS);
    } catch (err) {
      await topology.stop();
      throw err;
    }
    return topology;
  }

  /** The cluster as a live node sees it. */
  private async nodes(): Promise<NodeLine[]> {
    for (const server of this.servers) {
      if (this.down.is(server)) continue;
      try {
        return parseNodes(await ask(server.port, (c) => c.cluster('NODES') as Promise<string>));
      } catch {
        // The next node.
      }
    }
    throw new Error('no cluster node answered');
  }

  /** Every slot served, `masters` masters each with a replica in sync, every live node saying cluster_state:ok. */
  private async waitHealthy(masters: number, timeoutMs: number, replicas = true, gone?: string): Promise<void> {
    await waitFor(
      `the cluster healthy (${masters} masters${replicas ? ' with a replica each' : ''})`,
      async () => {
        for (const server of this.servers) {
          if (this.down.is(server)) continue;
          const info = await ask(server.port, (c) => c.cluster('INFO') as Promise<string>);
          if (!info.includes('cluster_state:ok')) return false;
        }
        const nodes = await this.nodes();
        const live = nodes.filter((n) => !n.flags.includes('fail') && !n.flags.includes('fail?'));
        const serving = live.filter((n) => n.flags.includes('master') && n.slots > 0);
        if (gone !== undefined && serving.some((n) => n.address === gone)) return false;
        if (serving.length !== masters || serving.reduce((n, m) => n + m.slots, 0) !== 16384) return false;
        if (!replicas) return true;
        for (const master of serving) {
          const port = Number(master.address.split(':')[1]);
          const online = (await ask(port, (c) => c.info('replication'))).split('state=online').length - 1;
          if (online < 1) return false;
        }
        return true;
      },
      timeoutMs,
      { intervalMs: 200 },
    );
  }

  /** The masters serving slots now (host:port). */
  async masters(): Promise<string[]> {
    return (await this.nodes()).filter((n) => n.flags.includes('master') && !n.flags.includes('fail') && n.slots > 0).map((n) => n.address);
  }

  /**
   * SIGKILL of a master (each kill takes the next one, so repeated kills hit different slot ranges);
   * resolves once its replica was promoted and every slot is served again.
   */
  async killMaster(): Promise<{ readonly killed: string; readonly promoted: string }> {
    const masters = await this.masters();
    const killed = masters[this.kills % masters.length]!;
    this.kills += 1;
    const victim = this.servers.find((s) => `127.0.0.1:${s.port}` === killed);
    if (victim === undefined) throw new Error(`the cluster names ${killed}, which is none of the topology's servers`);
    await this.down.kill(victim);
    await this.waitHealthy(masters.length, FAILOVER_TIMEOUT_MS, false, killed);
    const promoted = (await this.masters()).find((m) => !masters.includes(m)) ?? '?';
    return { killed, promoted };
  }

  /** The node killMaster() killed comes back; resolves once it replicates from the promoted master. */
  async restart(): Promise<void> {
    if (await this.down.restart()) await this.waitHealthy((await this.masters()).length, FAILOVER_TIMEOUT_MS);
  }

  /** Keys held by each master serving slots now (DBSIZE), by address. */
  async keysPerMaster(): Promise<{ readonly address: string; readonly keys: number }[]> {
    const masters = await this.masters();
    return Promise.all(masters.map(async (address) => ({ address, keys: await ask(Number(address.split(':')[1]), (c) => c.dbsize()) })));
  }

  /** used_cpu_sys + used_cpu_user of each master serving slots now, in µs. */
  async cpuPerMaster(): Promise<{ readonly address: string; readonly cpuMicros: number }[]> {
    const masters = await this.masters();
    return Promise.all(masters.map(async (address) => ({ address, cpuMicros: cpuMicrosOf(await ask(Number(address.split(':')[1]), (c) => c.info('cpu'))) })));
  }

  async stop(): Promise<void> {
    await Promise.all(this.servers.map((s) => s.stop(2000)));
    if (this.ownDir) rmSync(this.dir, { recursive: true, force: true });
  }
}

/** used_cpu_sys + used_cpu_user of an INFO CPU reply, in µs. */
export function cpuMicrosOf(info: string): number {
  const field = (name: string): number => Number(new RegExp(`^${name}:([0-9.]+)`, 'm').exec(info)?.[1] ?? 0);
  return Math.round((field('used_cpu_sys') + field('used_cpu_user')) * 1e6);
}
