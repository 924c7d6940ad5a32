import cluster from 'node:cluster';
import { openLedgerDb } from '../ledger/db';
import { ledgerRecordView } from '../ledger/lookup';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import v8 from 'node:v8';
import { loadGatewayConfig, type GatewayConfig } from '../config/env';
import { homeWalletId, walletRules, type WalletEntry } from '../config/registry';
import { createDuties, type QueueDuties } from '../duties/queues';
import { openGuardedWallet, type WalletBreaker } from '../duties/wallet-breaker';
import { createEngine, type Engine } from '../engine';
import { createRouting } from '../engine/routing';
import { walletLayout, walletOfSessionId } from '../registry/wallet-layout';
import { createApp, createAppServer } from '../http/app';
import { Router, type NextFunction, type Request, type Response } from 'express';
import { createReloader, processId, type ReloadResult } from '../registry/reload';
import { reloadDeployment, startReloadBus } from '../registry/reload-bus';
import { planSummary } from '../registry/reload-plan';
import { reinstateWallet } from '../registry/wallet-retire';
import { demoGameRouter } from '../http/demo-game';
import { operatorRouters } from '../http/operators';
import { createClosers, runUntilSignal, startWith, type Closers, type Running } from '../lib/lifecycle';
import { applyServerTimeouts } from '../http/server-timeouts';
import { serveClusterMetrics } from '../observability/cluster-metrics';
import { throttledErrorLog } from '../observability/error-events';
import { createBusyLogger, createLogger, type Logger } from '../observability/logger';
import { createMetrics, walletMetrics, type Metrics } from '../observability/metrics';
import { startTracing } from '../observability/tracing';
import { durabilityFor } from '../store/durability';
import type { ShardLayout } from '../store/shards';
import { closeRedis, createRedis, redisTargetOf, type RedisClient } from '../store/redis';
import { createSessionStore, type SessionStore } from '../store/sessions';
import { createTransactionStore, type TransactionStore } from '../store/transactions';
import type { WalletClient } from '../wallet/protocol';

/**
 * The gateway process (`npm start`): config → tracing → Redis → stores → wallet client → duties →
 * app → listen, each deferred on one closer stack right after it opened. One close, in reverse: stop
 * accepting and let in-flight requests finish, then the duties' queues, the wallet client, Redis,
 * and last the tracing SDK's flush.
 * A start that fails (a port in use) closes what it had opened and throws.
 */
export interface RunningGateway {
  readonly url: string;
  readonly server: Server;
  readonly metrics: Metrics;
  /** What the app runs on, for the process that embeds it (dev, tests) to look at. */
  readonly parts: GatewayParts;
  /** Reads WALLETS_FILE again in this process alone (SIGHUP; contract 11). */
  reload(): Promise<ReloadResult>;
  /** Server (draining) → reload subscription → queues → wallet client → Redis → tracing; once, every step even if one fails. */
  close(): Promise<void>;
}

/** One wallet's world (contract 11): its keys, stores, queues, client and breaker. */
export interface WalletParts {
  readonly entry: WalletEntry;
  readonly layout: ShardLayout;
  readonly sessions: SessionStore;
  readonly transactions: TransactionStore;
  readonly duties: QueueDuties;
  readonly wallet: WalletClient;
  readonly breaker: WalletBreaker;
  /** Calls open at the wallet over every process of the deployment (each other one's as of its last second). */
  inFlight(): Promise<number>;
}

/**
 * The home wallet's parts (wallet `default`, else the registry's first: the one the operators'
 * pages and the demo game serve), and every wallet's by id.
 */
export interface GatewayParts extends WalletParts {
  readonly redis: RedisClient;
  readonly wallets: ReadonlyMap<string, WalletParts>;
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
  /** The engine's clock; default Date.now. */
  readonly clock?: () => number;
  /** The home wallet's client; default the undici client built from the registry (closed with the gateway either way). */
  readonly wallet?: WalletClient;
  /** The engine API's body deadline; default the contract's 10 s (tests use a shorter one). */
  readonly bodyTimeoutMs?: number;
}

/** In-flight requests get this long after SIGTERM before their connections are cut. */
const DRAIN_TIMEOUT_MS = 10_000;

export async function startGateway(config: GatewayConfig, logger: Logger, options: GatewayOptions = {}): Promise<RunningGateway> {
  const closers = createClosers((step, err) => logger.error({ err, step }, 'gateway close step failed'));
  return startWith(closers, () => openGateway(config, logger, options, closers));
}

async function openGateway(config: GatewayConfig, logger: Logger, options: GatewayOptions, closers: Closers): Promise<RunningGateway> {
  // First and closed last: every part built below sees whether tracing is on, and the spans of the
  // whole shutdown are flushed.
  const tracing = await startTracing(config.tracing);
  closers.defer('tracing', () => tracing.close());
  const target = redisTargetOf(config);
  const redis = createRedis(target, { name: 'gateway-store', onError: throttledErrorLog(logger, 'redis error (store connection)') });
  closers.defer('redis', () => closeRedis(redis));
  const bullRedis = createRedis(target, { forBullmq: true, name: 'gateway-queues', onError: throttledErrorLog(logger, 'redis error (queue connection)') });
  closers.defer('queue redis', () => closeRedis(bullRedis));
  const metrics = options.metrics ?? createMetrics();
  let registry = config.registry;
  const homeId = homeWalletId(registry);
  // The ledger's reads (history API, lookups past Redis's retention); the money path never touches PostgreSQL.
  const ledgerDb = config.DATABASE_URL === undefined ? undefined : openLedgerDb(config.DATABASE_URL, { max: 2, statementTimeoutMs: 10_000 });
  if (ledgerDb !== undefined) closers.defer('ledger database', () => ledgerDb.end());
  // Live maps: a reload (contract 11) adds, replaces and drops entries; routing reads them per call.
  const wallets = new Map<string, WalletParts>();
  const engines = new Map<string, Engine>();
  const closersOf = new Map<string, Closers>();
  // A wallet's queues depend on its key layout alone: a changed wallet keeps them, so a request still
  // on the old client queues its retries and compensations on open queues.
  const dutiesOf = new Map<string, QueueDuties>();
  /** Wallets replaced or removed by a reload: closed once their calls in flight ended (undici's close waits for them). */
  const retiring = new Set<Promise<void>>();

  /** One wallet's world, with closers of its own: a reload may open and close it while the gateway runs. */
  const openWallet = (entry: WalletEntry, injected: WalletClient | undefined): void => {
    const own = createClosers((step, err) => logger.error({ err, step, wallet: entry.id }, 'gateway close step failed'));
    const layout = walletLayout(config, entry.id);
    // Every line about this wallet's sessions, transactions and calls names it.
    const walletLogger = logger.child({ wallet: entry.id });
    const sessions = createSessionStore(redis, layout, config.SESSION_TTL_SECONDS);
    const transactions = createTransactionStore(redis, layout, config.RECORD_RETENTION_SECONDS, Date.now, config.DATABASE_URL !== undefined);
    // The wallet's breaker state lives in its own shard 0.
    const { wallet, breaker, cap } = openGuardedWallet({
      settings: entry.client,
      walletId: entry.id,
      maxInFlight: entry.maxInFlight,
      redis,
      keys: layout.keys(0),
      logger: walletLogger,
      metrics: walletMetrics(metrics, entry.id),
      wallet: injected,
      observeCalls: true,
    });
    own.defer(`wallet client ${entry.id}`, () => wallet.close());
    own.defer(`wallet breaker ${entry.id}`, () => breaker.close());
    own.defer(`wallet in-flight cap ${entry.id}`, () => cap.close());
    const duties = dutiesOf.get(entry.id) ?? createDuties({ connection: bullRedis, layout, onError: throttledErrorLog(logger, 'queue error') });
    dutiesOf.set(entry.id, duties);
    // WAIT on both connections that write an answer's state: the store's (records) and BullMQ's (jobs).
    const durability = durabilityFor(config, [redis, bullRedis], layout);
    const engineConfig = { ...config, ...walletRules(entry) };
    wallets.set(entry.id, { entry, layout, sessions, transactions, duties, wallet, breaker, inFlight: () => cap.deploymentCalls() });
    engines.set(entry.id, createEngine({ wallet, sessions, transactions, duties, durability, config: engineConfig, clock: options.clock ?? Date.now, logger: walletLogger, breaker, cap, ledgerLookup: ledgerDb === undefined ? undefined : (id) => ledgerRecordView(ledgerDb, entry.id, id) }));
    closersOf.set(entry.id, own);
  };
  /** Closes a wallet's client, breaker and cap; `removed`: its queues too, after them. */
  const retire = (walletId: string, removed: boolean): void => {
    const own = closersOf.get(walletId);
    const duties = removed ? dutiesOf.get(walletId) : undefined;
    closersOf.delete(walletId);
    if (removed) dutiesOf.delete(walletId);
    const closing = (async () => {
      await own?.closeAll().catch(() => undefined);
      await duties?.close().catch((err: unknown) => logger.error({ err, step: `queues ${walletId}` }, 'gateway close step failed'));
    })();
    retiring.add(closing);
    void closing.finally(() => retiring.delete(closing));
  };
  // One step for every wallet, where each wallet's steps were: after the server, before Redis.
  closers.defer('wallets', async () => {
    for (const id of [...closersOf.keys()]) retire(id, true);
    await Promise.all([...retiring]);
  });
  for (const entry of registry.wallets) openWallet(entry, entry.id === homeId ? options.wallet : undefined);
  const home = wallets.get(homeId)!;
  // The demo game plays at the wallet its session was launched against, and arms that wallet's simulator.
  const demoWalletOf = (sessionId: string) => {
    const walletId = walletOfSessionId(sessionId);
    const found = walletId === undefined ? undefined : engines.get(walletId);
    return found === undefined ? undefined : { engine: found, simulatorUrl: wallets.get(walletId!)!.entry.client.WALLET_BASE_URL };
  };
  const demoGame = config.DEMO_GAME ? [demoGameRouter({ walletOf: demoWalletOf, random: options.random, logger: logger.child({ component: 'demo-game' }) })] : [];
  if (config.DATABASE_URL === undefined) logger.warn('no ledger: DATABASE_URL is unset, so history is kept in Redis only, for RECORD_RETENTION_SECONDS (/readyz says so too)');
  const reloader = createReloader({
    readRegistry: config.readRegistry,
    current: () => registry,
    redis,
    layoutOf: (walletId) => walletLayout(config, walletId),
    async apply(plan) {
      for (const entry of plan.removed) {
        wallets.delete(entry.id);
        engines.delete(entry.id);
        retire(entry.id, true);
      }
      for (const entry of plan.changed) {
        // Replaced (but its queues): the calls in flight finish on the old client, the next call takes the new one.
        // Retired before the new one opens: retire finds a wallet's closers by its id, which the new one takes.
        retire(entry.id, false);
        openWallet(entry, undefined);
      }
      for (const entry of plan.added) openWallet(entry, undefined);
      registry = plan.next;
      operators = buildOperators();
      logger.info({ wallets: registry.wallets.map((w) => w.id), engines: registry.engines.map((e) => e.id), ...planSummary(plan) }, 'registry reloaded');
    },
  });
  const buildOperators = (): Router => {
    const current = wallets.get(homeId)!;
    const operatorConfig = { ...config, ...walletRules(current.entry) };
    const router = Router();
    const list = registry.wallets.map((entry) => wallets.get(entry.id)!).map((parts) => ({ ...parts, queues: parts.duties.queues }));
    for (const r of operatorRouters({ config: operatorConfig, logger, metrics, redis, wallets: list, homeWallet: homeId, ledgerDb, reloadRegistry: () => reloadDeployment(reloader, bus) })) router.use(r);
    return router;
  };
  let operators = buildOperators();
  // Subscribed once everything a reload swaps exists; closed right after the server stops taking requests.
  const bus = await startReloadBus({ redis, prefix: config.QUEUE_PREFIX, self: processId('gateway'), reload: () => reloader.reload(), logger });
  closers.defer('reload subscription', async () => {
    await bus.close();
    // A SIGHUP's reload under way ends before the wallets close.
    await reloader.idle();
  });
  // The operators' routes are built over the wallets of the registry; a reload builds them again.
  const extraRouters = [(req: Request, res: Response, next: NextFunction) => operators(req, res, next), ...demoGame];
  const app = createApp({ routing: createRouting(engines), engines: () => registry.engines, logger, metrics, extraRouters, bodyTimeoutMs: options.bodyTimeoutMs });
  for (const entry of registry.wallets) await reinstateWallet(redis, walletLayout(config, entry.id));

  const server = await new Promise<Server>((resolve, reject) => {
    const s = createAppServer(app);
    s.once('error', reject);
    s.listen(config.PORT, options.host ?? '0.0.0.0', () => {
      s.off('error', reject);
      resolve(s);
    });
  });
  applyServerTimeouts(server);
  closers.defer('server', () => drain(server, options.drainTimeoutMs ?? DRAIN_TIMEOUT_MS));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    server,
    metrics,
    parts: { ...home, redis, wallets },
    reload: () => reloader.reload(),
    close: () => closers.closeAll(),
  };
}

/** Stops accepting; requests in flight get `timeoutMs` before their connections are cut. */
async function drain(server: Server, timeoutMs: number): Promise<void> {
  const drained = new Promise<void>((resolve) => server.close(() => resolve()));
  // Keep-alive connections with no request in flight would hold close() open.
  server.closeIdleConnections();
  const cut = setTimeout(() => server.closeAllConnections(), timeoutMs);
  await drained;
  clearTimeout(cut);
}

/** A worker that died on its own is replaced after this pause (a crash loop must not spin). */
const RESPAWN_DELAY_MS = 1_000;

/**
 * GATEWAY_PROCESSES > 1: this process forks that many gateway workers that share the port
 * (node:cluster hands connections round-robin) and does nothing else but sum their metrics for a
 * scrape (observability/cluster-metrics.ts). SIGHUP (reload the registry) and SIGTERM/SIGINT go to every
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
  // Each gateway process reloads WALLETS_FILE itself (contract 11).
  process.on('SIGHUP', () => {
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGHUP');
  });

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

async function runServer(config: GatewayConfig, logger: Logger): Promise<Running> {
  v8.setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  const gateway = await startGateway(config, logger);
  logger.info({ port: config.PORT }, 'gateway listening');
  logger.flush();
  return {
    async reload() {
      const result = await gateway.reload();
      if (!result.ok) logger.warn({ signal: 'SIGHUP', error: result.error }, 'registry reload refused');
    },
    close: () => gateway.close(),
    onSignal: (signal) => logger.info({ signal }, 'shutting down'),
    onStopped: (err) => (err === undefined ? logger.info('stopped') : logger.error({ err }, 'shutdown failed')),
    beforeExit: () => logger.flush(),
  };
}

/**
 * GATEWAY_PROCESSES > 1: the primary forwards the signals to its workers and exits once they are
 * gone (runPrimary); the stop that runUntilSignal starts waits for that exit.
 */
const primaryExitsByItself: Running = { close: () => new Promise<void>(() => undefined) };

async function start(): Promise<Running> {
  const config = loadGatewayConfig();
  if (config.GATEWAY_PROCESSES > 1 && cluster.isPrimary) {
    runPrimary(config, createLogger({ level: config.LOG_LEVEL, name: 'gateway' }));
    return primaryExitsByItself;
  }
  return runServer(config, createBusyLogger({ level: config.LOG_LEVEL, name: 'gateway', traced: config.tracing !== undefined }));
}

if (require.main === module) runUntilSignal('gateway', start, { reloadOnHangup: true });
