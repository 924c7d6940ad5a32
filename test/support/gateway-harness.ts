import type { Server } from 'node:http';
import request from 'supertest';
import { loadGatewayConfig } from '../../src/config/env';
import type { QueueDuties } from '../../src/duties/queues';
import { jsonNumber, stringifyJson } from '../../src/lib/json';
import { createClosers, startWith } from '../../src/lib/lifecycle';
import { startGateway } from '../../src/main/gateway';
import { createLogger } from '../../src/observability/logger';
import { createMetrics, type Metrics } from '../../src/observability/metrics';
import { startSimulator, type RunningSimulator } from '../../src/sim';
import type { Keys } from '../../src/store/keys';
import type { RedisClient } from '../../src/store/redis';
import type { SessionStore } from '../../src/store/sessions';
import type { ShardLayout } from '../../src/store/shards';
import type { TransactionStore } from '../../src/store/transactions';
import type { WalletClient } from '../../src/wallet/protocol';
import { deletePrefix, redisUrl, testPrefix } from './prefix';
import { logSink } from './log-sink';

/**
 * The real gateway (startGateway, as `npm start` wires it) on a loopback port over real Redis (own
 * prefix) and the real simulator over HTTP, with the real BullMQ duties (no worker runs, so queued
 * jobs stay put for the test to look at) and its log lines captured in memory.
 */
export const API_KEY = 'test-engine-key-0123456789';
const USER = 'gw-test';
const PASSWORD = 'gw-test-password';
const SECRET = 'gw-test-secret';

export interface Harness {
  readonly prefix: string;
  /** Shard 0's keys: the only shard unless the test's env sets REDIS_SHARDS. */
  readonly keys: Keys;
  readonly layout: ShardLayout;
  readonly sim: RunningSimulator;
  readonly redis: RedisClient;
  readonly sessions: SessionStore;
  readonly transactions: TransactionStore;
  readonly duties: QueueDuties;
  readonly wallet: WalletClient;
  readonly metrics: Metrics;
  readonly server: Server;
  readonly url: string;
  /** Every log line written so far (raw JSON text). */
  readonly logs: string[];
  /** The gateway, the prefix's keys, the simulator: every step, in that order. */
  close(): Promise<void>;
}

export interface HarnessOptions {
  label: string;
  /** Gateway environment over the harness's own (e.g. WALLET_TIMEOUT_MS, MULTI_BET_GAMES). */
  env?: Record<string, string>;
  /** The engine API's body deadline (default the contract's 10 s). */
  bodyTimeoutMs?: number;
}

export async function startHarness(options: HarnessOptions): Promise<Harness> {
  const prefix = testPrefix(options.label);
  const closers = createClosers();
  return startWith(closers, async () => {
    const sim = await startSimulator({ basicUser: USER, basicPassword: PASSWORD, signingSecret: SECRET, currencyDigits: { JPY: 0, BHD: 3 } });
    closers.defer('simulator', () => sim.close());
    closers.defer('prefix', () => deletePrefix(prefix));
    const { logs, destination } = logSink();
    const config = loadGatewayConfig({
      PORT: '0',
      REDIS_URL: redisUrl(),
      QUEUE_PREFIX: prefix,
      WALLET_BASE_URL: sim.url,
      WALLET_BASIC_USER: USER,
      WALLET_BASIC_PASSWORD: PASSWORD,
      WALLET_SIGNING_SECRET: SECRET,
      WALLET_TIMEOUT_MS: '2000',
      WALLET_CONNECTIONS: '32',
      PROVIDER_ID: '18446744073709551615',
      ENGINE_API_KEY: API_KEY,
      GAME_URL_TEMPLATE: 'https://games.example/play?session={session_id}&game={game_id}',
      CURRENCY_DIGITS: 'JPY:0,BHD:3',
      MULTI_BET_GAMES: 'multi-game',
      RETRY_DELAY_UNIT: 'ms',
      SESSION_TTL_SECONDS: '3600',
      RECORD_RETENTION_SECONDS: '3600',
      GATEWAY_PROCESSES: '1',
      LOG_LEVEL: 'debug',
      ...options.env,
    });
    const logger = createLogger({ level: config.LOG_LEVEL, name: 'gateway-test', destination });
    // No drain: a test's request still hanging at the end is cut at once.
    const gateway = await startGateway(config, logger, {
      host: '127.0.0.1',
      metrics: createMetrics({ defaultMetrics: false }),
      drainTimeoutMs: 0,
      bodyTimeoutMs: options.bodyTimeoutMs,
    });
    closers.defer('gateway', () => gateway.close());
    const { redis, layout, sessions, transactions, duties, wallet } = gateway.parts;
    return {
      prefix,
      keys: layout.keys(0),
      layout,
      sim,
      redis,
      sessions,
      transactions,
      duties,
      wallet,
      metrics: gateway.metrics,
      server: gateway.server,
      url: gateway.url,
      logs,
      close: () => closers.closeAll(),
    };
  });
}

/** JSON with `amount` (given as decimal text) written as a raw JSON number. */
export function body(fields: Record<string, unknown>): string {
  const out: Record<string, unknown> = { ...fields };
  if (typeof out.amount === 'string') out.amount = jsonNumber(out.amount);
  return stringifyJson(out);
}

let seq = 0;
/** A player id no other test uses (big, to keep the u64 path honest). */
export function newPlayerId(): string {
  seq += 1;
  return String(18_000_000_000_000_000_000n + BigInt(process.pid) * 100_000n + BigInt(seq));
}

export function uniqueId(label: string): string {
  seq += 1;
  return `${label}-${process.pid}-${seq}`;
}

export interface LaunchOptions {
  token?: string;
  playerId?: string;
  siteId?: string;
  currency?: string;
  gameId?: string;
}

/** Launches through the gateway (JSON mode) and returns the session id. */
export async function launch(h: Harness, o: LaunchOptions = {}): Promise<{ sessionId: string; token: string; playerId: string }> {
  const token = o.token ?? uniqueId('tok');
  const playerId = o.playerId ?? newPlayerId();
  const res = await request(h.url)
    .get('/launch')
    .query({ token, player_id: playerId, site_id: o.siteId ?? '7', currency: o.currency ?? 'EUR', game_id: o.gameId ?? 'slot-1' })
    .set('Accept', 'application/json');
  if (res.status !== 200) throw new Error(`launch failed: ${res.status} ${res.text}`);
  return { sessionId: (res.body as { session_id: string }).session_id, token, playerId };
}

/** POST to the engine API with the Bearer key and a raw JSON body. */
export function engine(h: Harness, path: string, raw: string | Record<string, unknown> = {}) {
  const text = typeof raw === 'string' ? raw : body(raw);
  return request(h.url)
    .post(`/engine/v1${path}`)
    .set('Authorization', `Bearer ${API_KEY}`)
    .set('Content-Type', 'application/json')
    .send(text);
}

export async function txKeyCount(h: Harness): Promise<number> {
  return (await h.redis.keys(`${h.prefix}:tx:*`)).length;
}
