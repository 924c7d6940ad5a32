import type { BreakerState } from '../store/breaker';
import type { WalletBreaker } from '../duties/wallet-breaker';
import cluster from 'node:cluster';
import { Router, type Request, type Response } from 'express';
import Redis from 'ioredis';
import type { RedisClient } from '../store/redis';
import type { GatewayConfig } from '../config/env';
import type { WalletEntry, WalletRules } from '../config/registry';
import type { Queues } from '../duties/queues';
import { redriveMany } from '../duties/redrive';
import { auditedRedrive, type ActionDeps } from '../console/actions';
import { withDeadline } from '../lib/deadline';
import { LEASE_MARGIN_MS } from '../duties/settlement';
import { clusterScrape } from '../observability/cluster-metrics';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';
import { createQueueMetrics, SCRAPE_TIME_SERIES, type QueueMetricsCollector } from '../observability/queue-metrics';
import { primaryOf } from '../store/redis';
import type { TransactionStore } from '../store/transactions';
import type { WalletClient } from '../wallet/protocol';
import { createAuditTrail } from '../store/audit';
import type { SessionStore } from '../store/sessions';
import { createAdminRouter, type AdminDeps, type WalletAdmin, type WalletOverview } from './admin';
import { ledgerLag, type LedgerLag } from '../ledger/status';
import type { LedgerDb } from '../ledger/db';
import { createLedgerMetrics, LEDGER_SERIES } from '../observability/ledger-metrics';
import type { ConsoleDeps } from './console';

/**
 * The operators' probes: GET /readyz (Redis and the wallets: which one is down, never why) and
 * GET /metrics (Prometheus text).
 * GET /healthz belongs to the app itself: it must answer while anything behind it is down.
 *
 * Readiness and many wallets (contract 11): the instance is ready while Redis answers and at least
 * one wallet of the registry is up. A wallet that is down is down for every instance alike, so
 * taking instances out of the load balancer brings it no closer and would stop every other
 * casino's play with it; its state is named in the body (`wallets`) instead. With one wallet (every
 * single-wallet deployment) that wallet down is 503, as section 6 asks.
 */

export interface CheckResult {
  readonly ok: boolean;
  readonly detail: string;
  /** What /readyz shows instead of `down` (the wallet circuit breaker: `open`, `half_open`). */
  readonly label?: string;
}

/** The node a Sentinel-managed connection is on, and whether it says it is the primary. */
export interface PrimaryNode {
  readonly address: string;
  readonly isPrimary: boolean;
}

export interface Readiness {
  readonly ready: boolean;
  /** Names of the checks that failed: 'redis', 'wallet' (no wallet up). */
  readonly failed: readonly ('redis' | 'wallet')[];
  /** `wallet`: up while any wallet is; else the wallets' common state, or down. */
  readonly checks: { readonly redis: CheckResult; readonly wallet: CheckResult };
  /** Each wallet's check, by id in the registry's order. */
  readonly wallets: ReadonlyMap<string, CheckResult>;
  /** When the checks ran (ms since the epoch); cached answers carry the original time. */
  readonly checkedAt: number;
  /** With Sentinel: the primary the store is connected to (host:port), when Redis answered. */
  readonly redisPrimary?: string;
}

/** One wallet as readiness checks it. */
export interface ReadinessWallet {
  readonly id: string;
  readonly wallet: Pick<WalletClient, 'healthCheck'>;
  /** The wallet circuit breaker's state: while not closed the wallet counts as down, named by the state. */
  readonly breaker?: () => BreakerState;
}

export interface ReadinessOptions {
  redis: Pick<RedisClient, 'ping'>;
  /** Every wallet of the registry (at least one). */
  wallets: readonly ReadinessWallet[];
  /** With Sentinel: which node the store is on; Redis is ready only while that node is the primary. */
  primary?: () => Promise<PrimaryNode>;
  /** An answer is reused this long, so a crowd of probes cannot hammer the wallets. Default 1500. */
  cacheMs?: number;
  /** Redis must answer PING within this. Default 1000. */
  redisTimeoutMs?: number;
  /** A wallet's health check must answer within this (one hanging wallet never holds the probe longer). Default 2000. */
  walletTimeoutMs?: number;
  clock?: () => number;
}

export interface ReadinessProbe {
  check(): Promise<Readiness>;
}

async function pingRedis(redis: Pick<RedisClient, 'ping'>, timeoutMs: number): Promise<CheckResult> {
  try {
    const reply = await withDeadline(redis.ping(), timeoutMs, 'PING');
    return reply === 'PONG' ? { ok: true, detail: 'PONG' } : { ok: false, detail: `PING answered ${reply}` };
  } catch (err) {
    return { ok: false, detail: (err as Error).message };
  }
}

async function checkWallet(w: ReadinessWallet, timeoutMs: number): Promise<CheckResult> {
  const breaker = w.breaker?.() ?? 'closed';
  if (breaker !== 'closed') return { ok: false, detail: `circuit breaker ${breaker}`, label: breaker };
  try {
    const { healthy, detail } = await withDeadline(w.wallet.healthCheck(), timeoutMs, 'health check');
    return { ok: healthy, detail };
  } catch (err) {
    return { ok: false, detail: (err as Error).message };
  }
}

/** The wallets as one check: up while any is up; else their common state (one wallet: its own), or down. */
function walletsCheck(checks: readonly CheckResult[]): CheckResult {
  const up = checks.filter((c) => c.ok).length;
  if (up > 0) return { ok: true, detail: `${up} of ${checks.length} wallets up` };
  const labels = new Set(checks.map((c) => c.label));
  const [label] = labels;
  const detail = checks.length === 1 ? checks[0]!.detail : `none of ${checks.length} wallets up`;
  return labels.size === 1 && label !== undefined ? { ok: false, detail, label } : { ok: false, detail };
}

async function askPrimary(primary: (() => Promise<PrimaryNode>) | undefined, timeoutMs: number): Promise<PrimaryNode | undefined> {
  if (primary === undefined) return undefined;
  try {
    return await withDeadline(primary(), timeoutMs, 'ROLE');
  } catch {
    // PING fails too then, and says so.
    return undefined;
  }
}

export function createReadinessProbe(options: ReadinessOptions): ReadinessProbe {
  const cacheMs = options.cacheMs ?? 1500;
  const redisTimeoutMs = options.redisTimeoutMs ?? 1000;
  const walletTimeoutMs = options.walletTimeoutMs ?? 2000;
  const clock = options.clock ?? Date.now;
  let cached: { value: Readiness; until: number } | undefined;
  // Probes arriving while a check runs share it rather than start their own.
  let running: Promise<Readiness> | undefined;

  async function run(): Promise<Readiness> {
    const [pinged, walletChecks, primary] = await Promise.all([
      pingRedis(options.redis, redisTimeoutMs),
      Promise.all(options.wallets.map((w) => checkWallet(w, walletTimeoutMs))),
      askPrimary(options.primary, redisTimeoutMs),
    ]);
    const redis = pinged.ok && primary !== undefined && !primary.isPrimary ? { ok: false, detail: `${primary.address} is not the primary` } : pinged;
    const wallet = walletsCheck(walletChecks);
    const failed = [...(redis.ok ? [] : ['redis' as const]), ...(wallet.ok ? [] : ['wallet' as const])];
    const redisPrimary = redis.ok && primary !== undefined ? { redisPrimary: primary.address } : {};
    const wallets = new Map(options.wallets.map((w, i) => [w.id, walletChecks[i]!]));
    return { ready: failed.length === 0, failed, checks: { redis, wallet }, wallets, checkedAt: clock(), ...redisPrimary };
  }

  return {
    check() {
      if (cached && clock() < cached.until) return Promise.resolve(cached.value);
      running ??= run()
        .then((value) => {
          cached = { value, until: clock() + cacheMs };
          return value;
        })
        .finally(() => {
          running = undefined;
        });
      return running;
    },
  };
}

export interface OperatorRoutesDeps {
  readiness: ReadinessProbe;
  metrics: Metrics;
  /** Refreshes the queue gauges before each scrape. */
  queueMetrics?: QueueMetricsCollector;
  /** The text of a scrape; default this process's registry (a cluster worker asks the primary for the sum). */
  scrape?: () => Promise<string>;
  /** The ledger's lag (contract 12); undefined: no ledger is kept. Never part of readiness. */
  ledger?: () => Promise<LedgerLag>;
  logger?: Logger;
}

/** /readyz's `ledger`: off, or how far behind; a ledger that cannot be read is `unknown`, and the gateway stays ready. */
async function ledgerState(read: (() => Promise<LedgerLag>) | undefined): Promise<Record<string, unknown>> {
  if (read === undefined) return { state: 'off', note: 'no ledger: DATABASE_URL is unset' };
  try {
    const lag = await withDeadline(read(), 1000, 'ledger lag');
    return { state: lag.outboxLength === 0 ? 'current' : 'behind', lag_seconds: Math.round(lag.lagSeconds * 10) / 10, outbox_length: lag.outboxLength };
  } catch {
    return { state: 'unknown' };
  }
}

/** GET /readyz and GET /metrics; mount at the root, before any auth. */
export function createOperatorRouter(deps: OperatorRoutesDeps): Router {
  const router = Router();

  // The wallets down at the last answer: ready with some down is logged when that set changes, not at every probe.
  let downBefore = '';
  router.get('/readyz', async (_req: Request, res: Response) => {
    const [result, ledger] = await Promise.all([deps.readiness.check(), ledgerState(deps.ledger)]);
    const down = [...result.wallets].filter(([, check]) => !check.ok);
    const downNow = down.map(([id]) => id).join(',');
    // The details (addresses, error text) go to the log only: /readyz answers anyone.
    if (!result.ready) deps.logger?.warn({ failed: result.failed, checks: result.checks, wallets: Object.fromEntries(down) }, 'not ready');
    else if (down.length > 0 && downNow !== downBefore) deps.logger?.warn({ wallets: Object.fromEntries(down) }, 'ready, with wallets down');
    downBefore = downNow;
    const state = (check: CheckResult): string => (check.ok ? 'up' : (check.label ?? 'down'));
    res
      .status(result.ready ? 200 : 503)
      .set('cache-control', 'no-store')
      .json({
        status: result.ready ? 'ready' : 'unready',
        failed: result.failed,
        checks: { redis: state(result.checks.redis), wallet: state(result.checks.wallet) },
        // Each wallet of the registry: `up`, `down`, or its breaker's state (`open`, `half_open`).
        wallets: Object.fromEntries([...result.wallets].map(([id, check]) => [id, state(check)])),
        // Sentinel: which node serves as the primary now (operators follow failovers by it).
        ...(result.redisPrimary === undefined ? {} : { redis_primary: result.redisPrimary }),
        // PostgreSQL down or slow never makes the gateway unready: the outbox holds the changes.
        ledger,
        checked_at: new Date(result.checkedAt).toISOString(),
      });
  });

  router.get('/metrics', async (_req: Request, res: Response) => {
    await deps.queueMetrics?.collect();
    const text = await (deps.scrape ? deps.scrape() : deps.metrics.registry.metrics());
    res.status(200).set('content-type', deps.metrics.registry.contentType).set('cache-control', 'no-store').send(text);
  });

  return router;
}

export interface OperatorWiring {
  /** The deployment's settings, and the rules of the wallet the operators' pages serve. */
  config: Pick<WalletRules, 'PROVIDER_ID' | 'WALLET_TIMEOUT_MS'> & Pick<
    GatewayConfig,
    | 'ADMIN_USER'
    | 'ADMIN_PASSWORD'
    | 'RECORD_RETENTION_SECONDS'
    | 'STALE_ROUND_SECONDS'
    | 'BIG_WIN_AMOUNT'
    | 'BIG_WIN_MULTIPLIER'
    | 'EXPORT_STATUS_PER_SECOND'
    | 'REDIS_SENTINELS'
    | 'DATABASE_URL'
  >;
  logger: Logger;
  metrics: Metrics;
  /** The store's connection (PING for /readyz). */
  redis: RedisClient;
  /** Every wallet of the registry, in its order: /readyz, the queue series, GET /admin/api/wallets, the console and the transactions API. */
  wallets: readonly OperatorWallet[];
  /** The id of the home wallet (the admin transactions API without `?wallet=`; its queues hold the upkeep). */
  homeWallet: string;
  /** The ledger's reading connections (contract 12); undefined without DATABASE_URL. */
  ledgerDb?: LedgerDb;
  /** POST /admin/api/registry/reload (contract 11); absent: not served. */
  reloadRegistry?: AdminDeps['reloadRegistry'];
}

/** One wallet of the registry as the operators' routes reach it: its list entry and its transactions API. */
export interface OperatorWallet {
  readonly entry: WalletEntry;
  readonly breaker: Pick<WalletBreaker, 'state'>;
  readonly transactions: TransactionStore;
  readonly sessions: SessionStore;
  readonly queues: Queues;
  readonly wallet: WalletClient;
  /** Calls open at the wallet over every process of the deployment. */
  inFlight(): Promise<number>;
}

/** A wallet's actions: its own client, stores and queues, audited in its own trail. */
function walletActions(w: OperatorWallet, redis: RedisClient, ledger: boolean): ActionDeps {
  return {
    store: w.transactions,
    sessions: w.sessions,
    queues: w.queues,
    audit: createAuditTrail(redis, w.transactions.layout, ledger),
    wallet: w.wallet,
    providerId: w.entry.providerId,
    compensationLeaseMs: w.entry.client.WALLET_TIMEOUT_MS + LEASE_MARGIN_MS,
    now: Date.now,
  };
}

/** A wallet's redrives, audited in its own audit trail, as the console's are. */
function walletAdmin(w: OperatorWallet, actions: ActionDeps): WalletAdmin {
  return {
    id: w.entry.id,
    transactions: w.transactions,
    redrive: (id, actor) => auditedRedrive(actions, id, actor),
    redriveMany: (filter, actor) => redriveMany({ store: w.transactions, queues: w.queues }, filter, (id) => auditedRedrive(actions, id, actor)),
  };
}

function walletOverview(wallets: readonly OperatorWallet[]): () => Promise<WalletOverview[]> {
  return () =>
    Promise.all(
      wallets.map(async (w) => ({
        id: w.entry.id,
        provider_id: w.entry.providerId,
        breaker: w.breaker.state(),
        in_flight: await w.inFlight(),
        pending: await w.transactions.countPending(),
        dead: (await w.transactions.listDead(0, 1)).total,
      })),
    );
}

/** The console over every wallet of the registry, in its order. */
function consoleDeps(w: OperatorWiring, actions: ReadonlyMap<string, ActionDeps>, logger: Logger): ConsoleDeps {
  const { config, redis } = w;
  const each = w.wallets.map((wallet) => ({ wallet, actions: actions.get(wallet.entry.id)! }));
  return {
    queries: {
      wallets: each.map(({ wallet, actions: a }) => ({
        id: wallet.entry.id,
        redis,
        layout: wallet.transactions.layout,
        store: wallet.transactions,
        sessions: wallet.sessions,
        queues: wallet.queues,
        audit: a.audit,
      })),
      settings: {
        staleRoundSeconds: config.STALE_ROUND_SECONDS,
        bigWinAmount: config.BIG_WIN_AMOUNT,
        bigWinMultiplier: config.BIG_WIN_MULTIPLIER,
        retentionSeconds: config.RECORD_RETENTION_SECONDS,
      },
      now: Date.now,
    },
    actions,
    exports: {
      wallets: w.wallets.map((wallet) => ({ id: wallet.entry.id, redis, layout: wallet.transactions.layout, sessions: wallet.sessions, wallet: wallet.wallet, providerId: wallet.entry.providerId })),
      statusPerSecond: config.EXPORT_STATUS_PER_SECOND,
      ledgerDb: w.ledgerDb,
    },
    homeWallet: w.homeWallet,
    ledgerDb: w.ledgerDb,
    logger,
  };
}

/** Everything operators reach over HTTP, ready for createApp's extraRouters. */
export function operatorRouters(w: OperatorWiring): Router[] {
  const { config, logger, metrics } = w;
  const queueMetrics = createQueueMetrics({
    metrics,
    wallets: w.wallets.map((wallet) => ({
      wallet: wallet.entry.id,
      // The workers run the upkeep (sweeper, dead-check) of every wallet from the home wallet's queue.
      queues: wallet.entry.id === w.homeWallet ? wallet.queues.all : wallet.queues.all.filter((q) => q !== wallet.queues.upkeep),
      deadCount: async () => (await wallet.transactions.listDead(0, 1)).total,
    })),
    logger,
  });
  const adminLogger = logger.child({ component: 'admin' });
  const actions = new Map(w.wallets.map((wallet) => [wallet.entry.id, walletActions(wallet, w.redis, config.DATABASE_URL !== undefined)]));
  const outboxKeys = w.wallets.flatMap((wallet) => wallet.transactions.layout.all.map((shard) => wallet.transactions.layout.keys(shard).ledgerOutbox()));
  const ledger = config.DATABASE_URL === undefined ? undefined : () => ledgerLag(w.redis, outboxKeys, Date.now());
  const ledgerMetrics = ledger === undefined ? undefined : createLedgerMetrics(metrics, ledger);
  const admins = new Map(w.wallets.map((wallet) => [wallet.entry.id, walletAdmin(wallet, actions.get(wallet.entry.id)!)]));
  const operatorConsole = consoleDeps(w, actions, adminLogger);
  const credentials =
    config.ADMIN_USER !== undefined && config.ADMIN_PASSWORD !== undefined ? { user: config.ADMIN_USER, password: config.ADMIN_PASSWORD } : undefined;
  return [
    createOperatorRouter({
      readiness: createReadinessProbe({
        redis: w.redis,
        wallets: w.wallets.map((wallet) => ({ id: wallet.entry.id, wallet: wallet.wallet, breaker: () => wallet.breaker.state() })),
        primary: config.REDIS_SENTINELS !== undefined && w.redis instanceof Redis ? () => primaryOf(w.redis as Redis) : undefined,
      }),
      metrics,
      queueMetrics: { collect: async () => void (await Promise.all([queueMetrics.collect(), ledgerMetrics?.collect()])) },
      // One of GATEWAY_PROCESSES processes: a scrape shows the sum over all of them.
      scrape: cluster.isWorker ? clusterScrape(metrics.registry, [...SCRAPE_TIME_SERIES, ...LEDGER_SERIES]) : undefined,
      ledger,
      logger,
    }),
    createAdminRouter({
      credentials,
      // Bull Board shows every wallet's queues (a wallet's queue prefix names it).
      queues: w.wallets.flatMap((wallet) => wallet.queues.all),
      walletAdmin: (walletId) => admins.get(walletId ?? w.homeWallet),
      logger: adminLogger,
      console: operatorConsole,
      wallets: walletOverview(w.wallets),
      history: { db: w.ledgerDb, homeWallet: w.homeWallet, logger: adminLogger },
      reloadRegistry: w.reloadRegistry,
    }),
  ];
}
