import Redis from 'ioredis';
import { ClusterTopology, cpuMicrosOf } from '../src/lib/redis-cluster';
import { RedisServer } from '../src/lib/redis-server';
import type { RunningSimulator } from '../src/sim';
import { betAll, launchLanes, runToExit, startBenchGateway, startBenchSimulator } from './in-process';

/**
 * `npx tsx bench/cluster-cost.ts [bets] [concurrency]` (`npm run bench:cluster`): bet throughput and
 * Redis CPU per bet on one Redis and on a Redis Cluster of 3 masters (one replica each), both on
 * loopback with the simulator and one gateway in this process, REDIS_MIN_REPLICAS 0 (the WAIT is
 * bench/wait-cost.ts's subject). Per master: the CPU it used (INFO CPU used_cpu_sys + used_cpu_user,
 * before and after) per bet of the run and per bet it served (scripts it ran / 2: a bet is a claim
 * and a settle), the keys it holds, and the bets per second one master could serve at that cost
 * (1 s of CPU / µs per bet it served). What a master burns idle (a cluster node's cron and gossip,
 * replication pings) is measured over a quiet spell first and taken off, scaled to the run's length.
 * docs/performance.md keeps the numbers.
 */
const IDLE_MS = 5_000;
interface MasterStats {
  readonly address: string;
  readonly cpuMicros: number;
  readonly scripts: number;
  readonly keys: number;
}

async function statsOf(address: string): Promise<MasterStats> {
  const [host, port] = address.split(':') as [string, string];
  const client = new Redis({ host, port: Number(port), lazyConnect: true, maxRetriesPerRequest: 1 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const [cpu, commands, keys] = await Promise.all([client.info('cpu'), client.info('commandstats'), client.dbsize()]);
    const calls = (name: string): number => Number(new RegExp(`^cmdstat_${name}:calls=(\\d+)`, 'm').exec(commands)?.[1] ?? 0);
    return { address, cpuMicros: cpuMicrosOf(cpu), scripts: calls('evalsha') + calls('eval'), keys };
  } finally {
    client.disconnect();
  }
}

interface Run {
  readonly topology: string;
  readonly bets: number;
  readonly perSecond: number;
  /** cpuMicros: over the run, less what the master used idle in as long (idleMicros). */
  readonly masters: readonly (MasterStats & { readonly bets: number; readonly idleMicros: number })[];
}

async function run(topology: string, env: Record<string, string>, masters: () => Promise<string[]>, sim: RunningSimulator, bets: number, concurrency: number): Promise<Run> {
  const bench = await startBenchGateway('cluster-cost', sim, env);
  try {
    // One player per lane: spread over the shards as real players are.
    const sessions = await launchLanes(bench, concurrency);
    const addresses = await masters();
    const quiet = await Promise.all(addresses.map(statsOf));
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
    const before = await Promise.all(addresses.map(statsOf));
    const idlePerMs = before.map((b, i) => (b.cpuMicros - quiet[i]!.cpuMicros) / IDLE_MS);
    const started = performance.now();
    await betAll(bench, sessions, bets);
    const elapsedMs = performance.now() - started;
    const elapsedS = elapsedMs / 1000;
    const after = await Promise.all(addresses.map(statsOf));
    return {
      topology,
      bets,
      perSecond: Math.round(bets / elapsedS),
      masters: after.map((a, i) => ({
        address: a.address,
        idleMicros: Math.round(idlePerMs[i]! * elapsedMs),
        cpuMicros: Math.max(0, a.cpuMicros - before[i]!.cpuMicros - Math.round(idlePerMs[i]! * elapsedMs)),
        scripts: a.scripts - before[i]!.scripts, keys: a.keys, bets: Math.round((a.scripts - before[i]!.scripts) / 2) })),
    };
  } finally {
    await bench.gateway.close();
  }
}

function report(r: Run): void {
  const cpu = r.masters.reduce((n, m) => n + m.cpuMicros, 0);
  const keys = r.masters.reduce((n, m) => n + m.keys, 0);
  console.log(`\n${r.topology}: ${r.bets} bets, ${r.perSecond} bets/s (one gateway process); Redis CPU ${(cpu / r.bets).toFixed(1)} µs per bet over all masters (idle use taken off)`);
  console.table(
    r.masters.map((m) => {
      const perServed = m.bets === 0 ? 0 : m.cpuMicros / m.bets;
      return {
        master: m.address,
        'bets served': m.bets,
        'share of keys': `${keys === 0 ? 0 : Math.round((100 * m.keys) / keys)} %`,
        'idle CPU ms taken off': Math.round(m.idleMicros / 1000),
        'CPU µs per bet of the run': Number((m.cpuMicros / r.bets).toFixed(1)),
        'CPU µs per bet served': Number(perServed.toFixed(1)),
        'ceiling bets/s per master': perServed === 0 ? 0 : Math.round(1e6 / perServed),
      };
    }),
  );
}

async function main(): Promise<void> {
  const bets = Number(process.argv[2] ?? 4000);
  const concurrency = Number(process.argv[3] ?? 64);
  const sim = await startBenchSimulator();
  const single = await RedisServer.start({ aof: 'off' });
  const cluster = await ClusterTopology.start({ masters: 3, aof: 'off' });
  try {
    const one = { REDIS_URL: single.url };
    const many = { REDIS_CLUSTER_NODES: cluster.nodeAddresses };
    // Warm-up passes (JIT, connections), then the measured ones.
    await run('warm-up', one, async () => [`127.0.0.1:${single.port}`], sim, Math.min(500, bets), concurrency);
    report(await run('one Redis (REDIS_SHARDS 1)', one, async () => [`127.0.0.1:${single.port}`], sim, bets, concurrency));
    await run('warm-up', many, () => cluster.masters(), sim, Math.min(500, bets), concurrency);
    report(await run('cluster, 3 masters (REDIS_SHARDS 16)', many, () => cluster.masters(), sim, bets, concurrency));
  } finally {
    await sim.close();
    await cluster.stop();
    await single.stop();
  }
}

runToExit(main);
