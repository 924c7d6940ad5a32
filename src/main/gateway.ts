import cluster from 'node:cluster';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import v8 from 'node:v8';
import { ConfigError, loadGatewayConfig, type GatewayConfig } from '../config/env';
import { createDuties } from '../duties/queues';
import { createEngine } from '../engine';
import { createApp } from '../http/app';
import { demoGameRouter } from '../http/demo-game';
import { operatorRouters } from '../http/operators';
import { applyServerTimeouts } from '../http/server-timeouts';
import { serveClusterMetrics } from '../observability/cluster-metrics';
import { createLogger, type Logger } from '../observability/logger';
import { createMetrics, type Metrics } from '../observability/metrics';
import { keysFor } from '../store/keys';
import { closeRedis, createRedis } from '../store/redis';
import { createSessionStore } from '../store/sessions';
import { createTransactionStore } from '../store/transactions';
import { createWalletClient } from '../wallet/client';
import { hmacSigner } from '../wallet/signer';
import { walletCallObserver } from '../observability/wallet-calls';

/**
 * The gateway process (`npm start`): config → Redis → stores → wallet client → duties → app →
 * listen. One shutdown: stop accepting, let in-flight requests finish, then close the duties,
 * the wallet client and Redis, in that order.
 */
export interface RunningGateway {
  readonly url: string;
  readonly server: Server;
  readonly metrics: Metrics;
  shutdown(): Promise<void>;
}

export interface GatewayOptions {
  /** Listen address; default 0.0.0.0. */
  readonly host?: string;
  /** The Prometheus series to record into; default a registry of its own. */
  readonly metrics?: Metrics;
  /** The demo game's dice (DEMO_GAME), uniform in [0, 1); default Math.random. */
  readonly random?: () => number;
  /** In-flight requests get this long at shutdown before their connections are cut. */
  readonly drainTimeoutMs?: number;
}

/** In-flight requests get this long after SIGTERM before their connections are cut. */
const DRAIN_TIMEOUT_MS = 10_000;
/** After shutdown finished, the process leaves at the latest this long later. */
const EXIT_GRACE_MS = 3_000;

export async function startGateway(config: GatewayConfig, logger: Logger, options: GatewayOptions = {}): Promise<RunningGateway> {
  const redis = createRedis(config.REDIS_URL, { name: 'gateway-store' });
  const bullRedis = createRedis(config.REDIS_URL, { forBullmq: true, name: 'gateway-queues' });
  const keys = keysFor(config.QUEUE_PREFIX);
  const sessions = createSessionStore(redis, keys, config.SESSION_TTL_SECONDS);
  const transactions = createTransactionStore(redis, keys, config.RECORD_RETENTION_SECONDS);
  const metrics = options.metrics ?? createMetrics();
  const wallet = createWalletClient({
    settings: config,
    signer: hmacSigner(config.WALLET_SIGNING_SECRET, config.WALLET_SIGNATURE_ALGO, config.WALLET_SIGNATURE_ENCODING),
    onCall: walletCallObserver(logger.child({ component: 'wallet' }), metrics),
  });
  const duties = createDuties({ connection: bullRedis, prefix: config.QUEUE_PREFIX });
  const engine = createEngine({ wallet, sessions, transactions, duties, config, clock: Date.now, logger });
  const demoGame = config.DEMO_GAME
    ? [demoGameRouter({ engine, simulatorUrl: config.WALLET_BASE_URL, random: options.random, logger: logger.child({ component: 'demo-game' }) })]
    : [];
  const extraRouters = [...operatorRouters({ config, logger, metrics, redis, wallet, transactions, queues: duties.queues }), ...demoGame];
  const app = createApp({ engine, engineApiKey: config.ENGINE_API_KEY, logger, metrics, extraRouters });

  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(config.PORT, options.host ?? '0.0.0.0', (err?: Error) => (err ? reject(err) : resolve(s)));
  });
  applyServerTimeouts(server);
  const { port } = server.address() as AddressInfo;

  let closing: Promise<void> | undefined;
  async function shutdown(): Promise<void> {
    const drained = new Promise<void>((resolve) => server.close(() => resolve()));
    // Keep-alive connections with no request in flight would hold close() open.
    server.closeIdleConnections();
    const cut = setTimeout(() => server.closeAllConnections(), options.drainTimeoutMs ?? DRAIN_TIMEOUT_MS);
    await drained;
    clearTimeout(cut);
    await duties.close();
    await wallet.close();
    await Promise.all([closeRedis(redis), closeRedis(bullRedis)]);
  }

  return {
    url: `http://127.0.0.1:${port}`,
    server,
    metrics,
    shutdown: () => (closing ??= shutdown()),
  };
}

/** Log bytes gathered per stdout write (two lines per request: one write per ~dozen requests). */
const LOG_BUFFER_BYTES = 4096;
const LOG_FLUSH_MS = 250;

/** A worker that died on its own is replaced after this pause (a crash loop must not spin). */
const RESPAWN_DELAY_MS = 1_000;

/**
 * GATEWAY_PROCESSES > 1: this process forks that many gateway workers that share the port
 * (node:cluster hands connections round-robin) and does nothing else but sum their metrics for a
 * scrape (observability/cluster-metrics.ts). SIGTERM/SIGINT go to every
 * worker, each drains on its own; the primary leaves once they are all gone. A worker that dies
 * while serving is replaced; one that dies before it ever listened (a port in use) ends the lot.
 */
function runPrimary(config: GatewayConfig, logger: Logger): void {
  let stopping = false;
  let failed = false;
  const listened = new Set<number>();

  const fork = (): void => {
    cluster.fork();
  };
  cluster.on('listening', (worker) => listened.add(worker.id));
  cluster.on('exit', (worker, code, signal) => {
    const clean = code === 0 && signal === null;
    if (!clean) failed = true;
    if (stopping || !listened.has(worker.id)) {
      if (!stopping && !listened.has(worker.id)) {
        logger.error({ worker_pid: worker.process.pid, code, signal }, 'gateway worker died before it listened; stopping');
        stopAll('worker-failed');
      }
      if (Object.keys(cluster.workers ?? {}).length === 0) {
        logger.info({ failed }, 'all gateway workers stopped');
        logger.flush();
        process.exit(failed ? 1 : 0);
      }
      return;
    }
    logger.error({ worker_pid: worker.process.pid, code, signal }, 'gateway worker died; starting another');
    setTimeout(() => {
      if (!stopping) fork();
    }, RESPAWN_DELAY_MS).unref();
  });

  function stopAll(signal: string): void {
    if (stopping) return;
    stopping = true;
    logger.info({ signal, workers: Object.keys(cluster.workers ?? {}).length }, 'shutting down');
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
    if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(failed ? 1 : 0);
  }
  process.on('SIGTERM', () => stopAll('SIGTERM'));
  process.on('SIGINT', () => stopAll('SIGINT'));

  serveClusterMetrics(logger);
  for (let i = 0; i < config.GATEWAY_PROCESSES; i += 1) fork();
  logger.info({ port: config.PORT, processes: config.GATEWAY_PROCESSES }, 'gateway primary started');
}

/**
 * V8 grows the old generation to a multiple (up to 4×) of what survived the last full GC when the
 * allocation rate is high; under load that was ~170 MB of heap for a live set of ~40 MB (measured:
 * heap used after GC stayed flat over 60k requests, so headroom, not a leak). A fixed 1.3× keeps a
 * process near 135 MB RSS; the cost is more frequent (cheap, with a small live set) full GCs. Set
 * before the app is built; it only tunes when V8 collects, never how much it may use.
 */
const HEAP_GROWING_PERCENT = 30;

async function runServer(config: GatewayConfig, logger: Logger): Promise<void> {
  v8.setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  const gateway = await startGateway(config, logger);
  logger.info({ port: config.PORT }, 'gateway listening');
  logger.flush();

  // `on`, not `once`: a process group signal and the primary's forward may both arrive, and a
  // second SIGTERM without a listener would kill the drain.
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    gateway.shutdown().then(
      () => {
        logger.info('stopped');
        logger.flush();
        process.exitCode = 0;
        // A cluster worker's IPC channel would hold it until the timer below.
        if (cluster.isWorker) cluster.worker?.disconnect();
        // Everything was closed; a straggling handle must not keep a stopped gateway alive.
        setTimeout(() => process.exit(), EXIT_GRACE_MS).unref();
      },
      (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        logger.flush();
        process.exitCode = 1;
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

async function main(): Promise<void> {
  let config: GatewayConfig;
  try {
    config = loadGatewayConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  if (config.GATEWAY_PROCESSES > 1 && cluster.isPrimary) {
    runPrimary(config, createLogger({ level: config.LOG_LEVEL, name: 'gateway' }));
    return;
  }
  const logger = createLogger({ level: config.LOG_LEVEL, name: 'gateway', bufferBytes: LOG_BUFFER_BYTES });
  // Buffered lines reach stdout at the latest this often (and at every flush below).
  setInterval(() => logger.flush(), LOG_FLUSH_MS).unref();
  await runServer(config, logger);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`gateway failed to start: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
}
