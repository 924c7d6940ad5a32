import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { loadWorkerConfig } from '../src/config/env';
import { cpuMicrosOf } from '../src/lib/redis-cluster';
import { askRedis, RedisServer } from '../src/lib/redis-server';
import { createLogger } from '../src/observability/logger';
import { createMetrics } from '../src/observability/metrics';
import { startWorker } from '../workers/worker';
import { runToExit, startBenchSimulator } from './in-process';

/**
 * `npx tsx bench/lanes-cost.ts [wallets…] [--shards S]`: what the per-wallet lanes cost an idle
 * worker (docs/background.md, "Per-wallet lanes"). For each wallet count, a worker in this process
 * on a private Redis with a registry of that many wallets (all at one simulator): the Redis
 * connections it holds, and the commands per second and the Redis CPU it costs with no work at all,
 * over IDLE_MS after the start settled.
 */
const IDLE_MS = 10_000;
const SETTLE_MS = 3_000;
const silent = new Writable({ write: (_chunk, _encoding, done) => done() });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface RedisCounts {
  readonly clients: number;
  readonly commands: number;
  readonly cpuMicros: number;
}

async function countsOf(port: number): Promise<RedisCounts> {
  return askRedis(port, async (client) => {
    const [clients, stats, cpu] = await Promise.all([client.info('clients'), client.info('stats'), client.info('cpu')]);
    const field = (info: string, name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1] ?? 0);
    // Less the connection asking.
    return { clients: field(clients, 'connected_clients') - 1, commands: field(stats, 'total_commands_processed'), cpuMicros: cpuMicrosOf(cpu) };
  });
}

async function measure(redis: RedisServer, simUrl: string, wallets: number, shards: number) {
  const dir = mkdtempSync(join(tmpdir(), 'wgw-lanes-cost-'));
  const file = join(dir, 'wallets.json');
  const ids = Array.from({ length: wallets }, (_, i) => (i === 0 ? 'default' : `casino-${i}`));
  writeFileSync(
    file,
    JSON.stringify({
      wallets: ids.map((id) => ({ id, base_url: simUrl, basic_user: 'gw', basic_password: 'gw-pass', signing_secret: 'gw-secret', provider_id: '1' })),
      engines: [{ id: 'bench', keys: ['lanes-cost-bench-key'], wallets: ids }],
    }),
  );
  const before = await countsOf(redis.port);
  const worker = await startWorker({
    config: loadWorkerConfig({ REDIS_URL: redis.url, REDIS_SHARDS: String(shards), QUEUE_PREFIX: `lanes-${wallets}`, WALLETS_FILE: file }),
    logger: createLogger({ level: 'silent', name: 'lanes-cost', destination: silent }),
    metrics: createMetrics({ defaultMetrics: false }),
  });
  try {
    await sleep(SETTLE_MS);
    const start = await countsOf(redis.port);
    await sleep(IDLE_MS);
    const end = await countsOf(redis.port);
    return {
      wallets,
      shards,
      workers: wallets * shards * 2 + 1,
      connections: start.clients - before.clients,
      // Less the bench's own INFO round trips (3 commands each).
      commandsPerSecond: Math.round(((end.commands - start.commands - 3) * 1000) / IDLE_MS),
      redisCpuPercent: Number((((end.cpuMicros - start.cpuMicros) / 1000 / IDLE_MS) * 100).toFixed(2)),
    };
  } finally {
    await worker.close();
  }
}

runToExit(async () => {
  const args = process.argv.slice(2);
  const at = args.indexOf('--shards');
  const shards = at === -1 ? 1 : Number(args[at + 1]);
  const counts = (at === -1 ? args : [...args.slice(0, at), ...args.slice(at + 2)]).map(Number);
  const redis = await RedisServer.start();
  const sim = await startBenchSimulator();
  try {
    for (const wallets of counts.length > 0 ? counts : [1, 10, 30]) console.log(JSON.stringify(await measure(redis, sim.url, wallets, shards)));
  } finally {
    await sim.close();
    await redis.stop();
  }
});
