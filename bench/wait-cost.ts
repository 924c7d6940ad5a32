import Redis from 'ioredis';
import { RedisServer } from '../src/lib/redis-server';
import type { RunningSimulator } from '../src/sim';
import { betAll, launchLanes, runToExit, startBenchGateway, startBenchSimulator } from './in-process';

/**
 * `npx tsx bench/wait-cost.ts [bets] [concurrency]`: what durable acknowledgements (REDIS_MIN_REPLICAS,
 * contract 9) cost per bet. A private primary with one replica on loopback, the simulator and one
 * gateway in this process; the same bets with REDIS_MIN_REPLICAS=0 and =1, one at a time (latency)
 * and `concurrency` at once (throughput), plus the WAIT commands Redis counted per bet.
 * docs/operators.md keeps the numbers.
 */
interface Pass {
  readonly minReplicas: number;
  readonly concurrency: number;
  readonly bets: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly perSecond: number;
  readonly waitsPerBet: number;
}

async function waitCalls(url: string): Promise<number> {
  const client = new Redis(url);
  try {
    const match = /^cmdstat_wait:calls=(\d+)/m.exec(await client.info('commandstats'));
    return match === null ? 0 : Number(match[1]);
  } finally {
    client.disconnect();
  }
}

async function pass(primary: RedisServer, sim: RunningSimulator, minReplicas: number, bets: number, concurrency: number): Promise<Pass> {
  const bench = await startBenchGateway('wait-cost', sim, { REDIS_URL: primary.url, REDIS_MIN_REPLICAS: String(minReplicas) });
  try {
    const sessions = await launchLanes(bench, concurrency);
    const before = await waitCalls(primary.url);
    const latencies: number[] = [];
    const started = performance.now();
    await betAll(bench, sessions, bets, (ms) => latencies.push(ms));
    const elapsedS = (performance.now() - started) / 1000;
    const waits = (await waitCalls(primary.url)) - before;
    latencies.sort((a, b) => a - b);
    const at = (p: number): number => Number((latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? 0).toFixed(2));
    return { minReplicas, concurrency, bets, p50Ms: at(0.5), p99Ms: at(0.99), perSecond: Math.round(bets / elapsedS), waitsPerBet: Number((waits / bets).toFixed(2)) };
  } finally {
    await bench.gateway.close();
  }
}

async function main(): Promise<void> {
  const bets = Number(process.argv[2] ?? 2000);
  const concurrency = Number(process.argv[3] ?? 32);
  const primary = await RedisServer.start({ aof: 'everysec' });
  const replica = await RedisServer.start({ aof: 'everysec', replicaOf: { host: '127.0.0.1', port: primary.port } });
  const sim = await startBenchSimulator();
  try {
    await primary.waitForReplicas(1);
    const rows: Pass[] = [];
    for (const c of [1, concurrency]) {
      // Warm-up pass (JIT, connections), then the measured pair.
      await pass(primary, sim, 0, Math.min(200, bets), c);
      for (const minReplicas of [0, 1]) rows.push(await pass(primary, sim, minReplicas, bets, c));
    }
    console.table(rows);
    for (const c of [1, concurrency]) {
      const [off, on] = [rows.find((r) => r.concurrency === c && r.minReplicas === 0)!, rows.find((r) => r.concurrency === c && r.minReplicas === 1)!];
      console.log(`concurrency ${c}: WAIT adds ${(on.p50Ms - off.p50Ms).toFixed(2)} ms at p50 per bet; throughput ${off.perSecond} → ${on.perSecond} bets/s`);
    }
  } finally {
    await sim.close();
    await replica.stop();
    await primary.stop();
  }
}

runToExit(main);
