import { createServer, type AddressInfo } from 'node:net';
import { Queue } from 'bullmq';
import express from 'express';
import Redis from 'ioredis';
import pino from 'pino';
import request from 'supertest';
import { createOperatorRouter, createReadinessProbe } from '../../src/http/operators';
import { createMetrics, type Metrics } from '../../src/observability/metrics';
import { createQueueMetrics } from '../../src/observability/queue-metrics';
import { startSimulator, type RunningSimulator } from '../../src/sim/index';
import { closeRedis, createRedis } from '../../src/store/redis';
import { shardLayout } from '../../src/store/shards';
import { createTransactionStore } from '../../src/store/transactions';
import { createWalletClient } from '../../src/wallet/client';
import { hmacSigner } from '../../src/wallet/signer';
import type { WalletClient } from '../../src/wallet/protocol';
import { waitFor } from '../../src/lib/wait-for';
import { deletePrefix, redisUrl, testPrefix } from '../support/prefix';

const prefix = testPrefix('operators-health');
const silent = pino({ level: 'silent' });
let sim: RunningSimulator;
/** A second wallet's simulator, with the same credentials. */
let simB: RunningSimulator;
let redis: Redis;
let wallet: WalletClient;
let walletB: WalletClient;
let queues: Queue[];
/** A second wallet's queues: the same names under its own prefix. */
let queuesB: Queue[];
let queueConnection: Redis;
let metrics: Metrics;

const credentials = { user: 'gw', password: 'gw-pass', secret: 'gw-secret' };

/** A port nothing listens on: bind one, note it, close it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function appWith(options: { redis: Redis; cacheMs?: number }) {
  const readiness = createReadinessProbe({ redis: options.redis, wallets: [{ id: 'default', wallet }], cacheMs: options.cacheMs ?? 0 });
  const store = createTransactionStore(redis, shardLayout(prefix, 1), 3600);
  const storeB = createTransactionStore(redis, shardLayout(`${prefix}:w:casino-b`, 1), 3600);
  const queueMetrics = createQueueMetrics({
    metrics,
    wallets: [
      { wallet: 'default', queues, deadCount: async () => (await store.listDead(0, 1)).total },
      { wallet: 'casino-b', queues: queuesB, deadCount: async () => (await storeB.listDead(0, 1)).total },
    ],
    logger: silent,
  });
  const app = express();
  app.use(createOperatorRouter({ readiness, metrics, queueMetrics, logger: silent }));
  return app;
}

beforeAll(async () => {
  sim = await startSimulator({ basicUser: credentials.user, basicPassword: credentials.password, signingSecret: credentials.secret });
  simB = await startSimulator({ basicUser: credentials.user, basicPassword: credentials.password, signingSecret: credentials.secret });
  redis = createRedis(redisUrl());
  const clientOf = (url: string): WalletClient =>
    createWalletClient({
      settings: {
        WALLET_BASE_URL: url,
        WALLET_BASIC_USER: credentials.user,
        WALLET_BASIC_PASSWORD: credentials.password,
        WALLET_SIGNING_SECRET: credentials.secret,
        WALLET_SIGNATURE_ALGO: 'sha256',
        WALLET_SIGNATURE_ENCODING: 'hex',
        // Longer than readiness waits for a health check.
        WALLET_TIMEOUT_MS: 5000,
        WALLET_CONNECTIONS: 4,
        WALLET_HTTP2: true,
        WALLET_TLS_INSECURE: false,
        walletHostHeader: new URL(url).host,
      },
      signer: hmacSigner(credentials.secret, 'sha256', 'hex'),
    });
  wallet = clientOf(sim.url);
  walletB = clientOf(simB.url);
  queueConnection = createRedis(redisUrl(), { forBullmq: true });
  queues = ['retries', 'terminates'].map((name) => new Queue(name, { connection: queueConnection, prefix }));
  queuesB = ['retries', 'terminates'].map((name) => new Queue(name, { connection: queueConnection, prefix: `${prefix}:w:casino-b` }));
  metrics = createMetrics();
});

afterEach(() => {
  sim.faults.clear();
  simB.faults.clear();
});

afterAll(async () => {
  await Promise.all([...queues, ...queuesB].map((q) => q.close()));
  await closeRedis(queueConnection);
  await deletePrefix(prefix);
  await closeRedis(redis);
  await wallet.close();
  await walletB.close();
  await sim.close();
  await simB.close();
});

const NO_LEDGER = { state: 'off', note: 'no ledger: DATABASE_URL is unset' };

describe('GET /readyz', () => {
  it('is 200 while Redis and the wallet answer, 503 naming the wallet while its health check fails, then 200 again', async () => {
    const app = appWith({ redis });
    const ok = await request(app).get('/readyz').expect(200);
    // Without DATABASE_URL no ledger is kept, and /readyz says so (contract 12), ready all the same.
    expect(ok.body).toEqual({ status: 'ready', failed: [], checks: { redis: 'up', wallet: 'up' }, wallets: { default: 'up' }, ledger: NO_LEDGER, checked_at: expect.any(String) });

    sim.faults.unhealthy(true);
    const down = await request(app).get('/readyz').expect(503);
    expect(down.body).toEqual({ status: 'unready', failed: ['wallet'], checks: { redis: 'up', wallet: 'down' }, wallets: { default: 'down' }, ledger: NO_LEDGER, checked_at: expect.any(String) });

    sim.faults.unhealthy(false);
    await request(app).get('/readyz').expect(200);
  });

  it('names Redis when Redis does not answer, without its address or error text (those go to the log)', async () => {
    // No reconnecting: the client ends after the refused connection and leaves nothing to close.
    const port = await closedPort();
    const deadRedis = new Redis(`redis://127.0.0.1:${port}`, { maxRetriesPerRequest: 0, retryStrategy: () => null });
    deadRedis.on('error', () => undefined);
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(line) });
    const app = express();
    app.use(createOperatorRouter({ readiness: createReadinessProbe({ redis: deadRedis, wallets: [{ id: 'default', wallet }], cacheMs: 0 }), metrics, logger }));
    const res = await request(app).get('/readyz').expect(503);
    expect(res.body).toEqual({ status: 'unready', failed: ['redis'], checks: { redis: 'down', wallet: 'up' }, wallets: { default: 'up' }, ledger: NO_LEDGER, checked_at: expect.any(String) });
    expect(res.text).not.toMatch(/closed|detail/i);
    expect(lines.join('')).toContain('"detail":"Connection is closed."');
  });

  it('with several wallets, one down, hanging or behind an open breaker is named in the body and the gateway stays ready; none up is 503', async () => {
    let breakerB: 'closed' | 'open' = 'closed';
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(line) });
    const readiness = createReadinessProbe({
      redis,
      wallets: [
        { id: 'default', wallet },
        { id: 'casino-b', wallet: walletB, breaker: () => breakerB },
      ],
      cacheMs: 0,
      walletTimeoutMs: 300,
    });
    const app = express();
    app.use(createOperatorRouter({ readiness, metrics, logger }));
    const body = (wallets: Record<string, string>, wallet = 'up') => ({ status: 'ready', failed: [], checks: { redis: 'up', wallet }, wallets, ledger: NO_LEDGER, checked_at: expect.any(String) });

    expect((await request(app).get('/readyz').expect(200)).body).toEqual(body({ default: 'up', 'casino-b': 'up' }));
    simB.faults.unhealthy(true);
    expect((await request(app).get('/readyz').expect(200)).body).toEqual(body({ default: 'up', 'casino-b': 'down' }));
    simB.faults.unhealthy(false);
    // A health check that never answers counts as down once readiness stops waiting for it.
    simB.faults.down('hang');
    expect((await request(app).get('/readyz').expect(200)).body).toEqual(body({ default: 'up', 'casino-b': 'down' }));
    simB.faults.down(null);
    breakerB = 'open';
    expect((await request(app).get('/readyz').expect(200)).body).toEqual(body({ default: 'up', 'casino-b': 'open' }));

    sim.faults.unhealthy(true);
    const none = await request(app).get('/readyz').expect(503);
    expect(none.body).toEqual({ status: 'unready', failed: ['wallet'], checks: { redis: 'up', wallet: 'down' }, wallets: { default: 'down', 'casino-b': 'open' }, ledger: NO_LEDGER, checked_at: expect.any(String) });

    // Each change of the wallets down while ready is logged once, with why; never in the body.
    const logged = lines.map((line) => JSON.parse(line) as { msg: string; wallets?: Record<string, { detail: string }> });
    expect(logged.filter((l) => l.msg === 'ready, with wallets down').map((l) => Object.keys(l.wallets ?? {}))).toEqual([['casino-b']]);
    expect(logged.find((l) => l.msg === 'ready, with wallets down')!.wallets!['casino-b']!.detail).toBe('HTTP 503');
    expect(logged.filter((l) => l.msg === 'not ready')).toHaveLength(1);
  });

  it('reuses one answer for the cache period so probes do not reach the wallet each time', async () => {
    const app = appWith({ redis, cacheMs: 60_000 });
    await request(app).get('/readyz').expect(200);
    sim.faults.unhealthy(true);
    // Within the cache period the wallet is not asked again: still the cached 200.
    await Promise.all([1, 2, 3].map(() => request(app).get('/readyz').expect(200)));
  });

  it('follows the wallet again once the cache period is over', async () => {
    const app = appWith({ redis, cacheMs: 100 });
    await request(app).get('/readyz').expect(200);
    sim.faults.unhealthy(true);
    await waitFor('readyz 503', async () => (await request(app).get('/readyz')).status === 503, 5000);
  });
});

describe('GET /metrics', () => {
  it('serves the wallet series, the queue depths per wallet, queue and state, the dead count per wallet and process metrics', async () => {
    metrics.walletCalls.inc({ operation: 'credit', outcome: 'ok', code: '1', wallet: 'default' });
    metrics.walletLatency.observe({ operation: 'credit', wallet: 'default' }, 0.012);
    await queues[0]!.add('retry', { transactionId: 'a' });
    await queues[0]!.add('retry', { transactionId: 'b' }, { delay: 60_000 });
    await queuesB[0]!.add('retry', { transactionId: 'a' }, { delay: 60_000 });

    const res = await request(appWith({ redis })).get('/metrics').expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    const text = res.text;
    expect(text).toContain('wallet_calls_total{operation="credit",outcome="ok",code="1",wallet="default"} 1');
    expect(text).toContain('wallet_call_duration_seconds_bucket{le="0.025",operation="credit",wallet="default"} 1');
    expect(text).toContain('queue_jobs{queue="retries",state="waiting",wallet="default"} 1');
    expect(text).toContain('queue_jobs{queue="retries",state="delayed",wallet="default"} 1');
    expect(text).toContain('queue_jobs{queue="retries",state="active",wallet="default"} 0');
    expect(text).toContain('queue_jobs{queue="terminates",state="failed",wallet="default"} 0');
    expect(text).toContain('queue_jobs{queue="retries",state="waiting",wallet="casino-b"} 0');
    expect(text).toContain('queue_jobs{queue="retries",state="delayed",wallet="casino-b"} 1');
    expect(text).toContain('transactions_dead{wallet="default"} 0');
    expect(text).toContain('transactions_dead{wallet="casino-b"} 0');
    expect(text).not.toMatch(/^queue_jobs\{queue="[^"]+",state="[^"]+"\}/m);
    for (const name of ['wallet_retries_total', 'debit_compensations_total', 'dead_transactions_total', 'engine_requests_total', 'process_cpu_seconds_total']) {
      expect(text).toContain(`# TYPE ${name}`);
    }
  });

  it('still answers with the other series when Redis is away, without stale queue depths', async () => {
    // BullMQ's options but no reconnecting, so the client ends by itself and leaves nothing to close.
    const connection = new Redis(`redis://127.0.0.1:${await closedPort()}`, { maxRetriesPerRequest: null, retryStrategy: () => null });
    connection.on('error', () => undefined);
    const lost = new Queue('retries', { connection, prefix });
    lost.on('error', () => undefined);
    try {
      const queueMetrics = createQueueMetrics({ metrics, wallets: [{ wallet: 'default', queues: [lost] }], logger: silent, timeoutMs: 300 });
      const app = express();
      const readiness = createReadinessProbe({ redis, wallets: [{ id: 'default', wallet }] });
      app.use(createOperatorRouter({ readiness, metrics, queueMetrics, logger: silent }));
      const res = await request(app).get('/metrics').expect(200);
      expect(res.text).toContain('# TYPE wallet_calls_total');
      expect(res.text).not.toMatch(/^queue_jobs\{/m);
    } finally {
      await lost.close();
    }
  });
});
