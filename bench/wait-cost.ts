import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import Redis from 'ioredis';
import { loadGatewayConfig } from '../src/config/env';
import { RedisServer } from '../src/lib/redis-server';
import { startGateway, type RunningGateway } from '../src/main/gateway';
import { createLogger } from '../src/observability/logger';
import { createMetrics } from '../src/observability/metrics';
import { startSimulator, type RunningSimulator } from '../src/sim';

/**
 * `npx tsx bench/wait-cost.ts [bets] [concurrency]`: what durable acknowledgements (REDIS_MIN_REPLICAS,
 * contract 9) cost per bet. A private primary with one replica on loopback, the simulator and one
 * gateway in this process; the same bets with REDIS_MIN_REPLICAS=0 and =1, one at a time (latency)
 * and `concurrency` at once (throughput), plus the WAIT commands Redis counted per bet.
 * docs/operators.md keeps the numbers.
 */
const WALLET = { user: 'gw', password: 'gw-pass', secret: 'gw-secret' } as const;
const API_KEY = 'wait-cost-key';

interface Pass {
  readonly minReplicas: number;
  readonly concurrency: number;
  readonly bets: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly perSecond: number;
  readonly waitsPerBet: number;
}

const silent = new Writable({ write: (_chunk, _encoding, done) => done() });

async function waitCalls(url: string): Promise<number> {
  const client = new Redis(url);
  try {
    const match = /^cmdstat_wait:calls=(\d+)/m.exec(await client.info('commandstats'));
    return match === null ? 0 : Number(match[1]);
  } finally {
    client.disconnect();
  }
}

async function post(gateway: RunningGateway, path: string, body: string): Promise<number> {
  const res = await fetch(`${gateway.url}/engine/v1${path}`, { method: 'POST', headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' }, body });
  await res.arrayBuffer();
  return res.status;
}

async function pass(primary: RedisServer, sim: RunningSimulator, minReplicas: number, bets: number, concurrency: number): Promise<Pass> {
  const nonce = randomBytes(4).toString('hex');
  const config = loadGatewayConfig({
    PORT: '0',
    REDIS_URL: primary.url,
    REDIS_MIN_REPLICAS: String(minReplicas),
    QUEUE_PREFIX: `wait-cost-${nonce}`,
    WALLET_BASE_URL: sim.url,
    WALLET_BASIC_USER: WALLET.user,
    WALLET_BASIC_PASSWORD: WALLET.password,
    WALLET_SIGNING_SECRET: WALLET.secret,
    PROVIDER_ID: '1',
    ENGINE_API_KEY: API_KEY,
    GATEWAY_PROCESSES: '1',
  });
  const gateway = await startGateway(config, createLogger({ level: 'silent', name: 'wait-cost', destination: silent }), { host: '127.0.0.1', metrics: createMetrics({ defaultMetrics: false }) });
  try {
    const sessions: string[] = [];
    for (let i = 0; i < concurrency; i += 1) {
      const res = await fetch(`${gateway.url}/launch?token=wc-${nonce}-${i}&player_id=${i + 1}&site_id=1&currency=EUR&game_id=g`, { headers: { accept: 'application/json' } });
      sessions.push(((await res.json()) as { session_id: string }).session_id);
    }
    const before = await waitCalls(primary.url);
    const latencies: number[] = [];
    let next = 0;
    const started = performance.now();
    await Promise.all(
      sessions.map(async (sessionId, lane) => {
        for (let i = next++; i < bets; i = next++) {
          const t0 = performance.now();
          const id = `wc-${nonce}-${lane}-${i}`;
          const status = await post(gateway, `/sessions/${sessionId}/bet`, `{"round_id":"${id}","transaction_id":"${id}","amount":0.01}`);
          latencies.push(performance.now() - t0);
          if (status !== 200) throw new Error(`bet answered ${status}`);
        }
      }),
    );
    const elapsedS = (performance.now() - started) / 1000;
    const waits = (await waitCalls(primary.url)) - before;
    latencies.sort((a, b) => a - b);
    const at = (p: number): number => Number((latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? 0).toFixed(2));
    return { minReplicas, concurrency, bets, p50Ms: at(0.5), p99Ms: at(0.99), perSecond: Math.round(bets / elapsedS), waitsPerBet: Number((waits / bets).toFixed(2)) };
  } finally {
    await gateway.close();
  }
}

async function main(): Promise<void> {
  const bets = Number(process.argv[2] ?? 2000);
  const concurrency = Number(process.argv[3] ?? 32);
  const primary = await RedisServer.start({ aof: 'everysec' });
  const replica = await RedisServer.start({ aof: 'everysec', replicaOf: { host: '127.0.0.1', port: primary.port } });
  const sim = await startSimulator({ basicUser: WALLET.user, basicPassword: WALLET.password, signingSecret: WALLET.secret });
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

void main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
