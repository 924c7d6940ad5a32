import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import type Redis from 'ioredis';
import request from 'supertest';
import { createDuties, type QueueDuties } from '../../src/duties/queues';
import { createEngine, type EngineConfig } from '../../src/engine';
import { createApp } from '../../src/http/app';
import { jsonNumber, stringifyJson } from '../../src/lib/json';
import { walletCallObserver } from '../../src/observability/wallet-calls';
import { createLogger } from '../../src/observability/logger';
import { createMetrics, type Metrics } from '../../src/observability/metrics';
import { startSimulator, type RunningSimulator } from '../../src/sim';
import { keysFor, type Keys } from '../../src/store/keys';
import { closeRedis, createRedis } from '../../src/store/redis';
import { createSessionStore, type SessionStore } from '../../src/store/sessions';
import { createTransactionStore, type TransactionStore } from '../../src/store/transactions';
import { createWalletClient } from '../../src/wallet/client';
import type { WalletClient } from '../../src/wallet/protocol';
import { hmacSigner } from '../../src/wallet/signer';
import { deletePrefix, redisUrl, testPrefix } from './prefix';

/**
 * A gateway app over real Redis (own prefix) and the real simulator over HTTP, with the real
 * BullMQ duties (no worker runs, so queued jobs stay put for the test to look at) and its log
 * lines captured in memory.
 */
export const API_KEY = 'test-engine-key-0123456789';
const USER = 'gw-test';
const PASSWORD = 'gw-test-password';
const SECRET = 'gw-test-secret';

export interface Harness {
  readonly prefix: string;
  readonly keys: Keys;
  readonly sim: RunningSimulator;
  readonly redis: Redis;
  readonly sessions: SessionStore;
  readonly transactions: TransactionStore;
  readonly duties: QueueDuties;
  readonly wallet: WalletClient;
  readonly metrics: Metrics;
  readonly server: Server;
  readonly url: string;
  /** Every log line written so far (raw JSON text). */
  readonly logs: string[];
  close(): Promise<void>;
}

export interface HarnessOptions {
  label: string;
  config?: Partial<EngineConfig>;
  walletTimeoutMs?: number;
  /** The engine API's body deadline (default the contract's 10 s). */
  bodyTimeoutMs?: number;
}

export async function startHarness(options: HarnessOptions): Promise<Harness> {
  const prefix = testPrefix(options.label);
  const keys = keysFor(prefix);
  const sim = await startSimulator({ basicUser: USER, basicPassword: PASSWORD, signingSecret: SECRET, currencyDigits: { JPY: 0, BHD: 3 } });
  const redis = createRedis(redisUrl());
  const bullRedis = createRedis(redisUrl(), { forBullmq: true });
  const logs: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      logs.push(chunk.toString('utf8'));
      callback();
    },
  });
  const logger = createLogger({ level: 'debug', name: 'gateway-test', destination });
  const metrics = createMetrics({ defaultMetrics: false });
  const timeout = options.walletTimeoutMs ?? 2000;
  const wallet = createWalletClient({
    settings: {
      WALLET_BASE_URL: sim.url,
      WALLET_BASIC_USER: USER,
      WALLET_BASIC_PASSWORD: PASSWORD,
      WALLET_SIGNING_SECRET: SECRET,
      WALLET_SIGNATURE_ALGO: 'sha256',
      WALLET_SIGNATURE_ENCODING: 'hex',
      WALLET_TIMEOUT_MS: timeout,
      WALLET_CONNECTIONS: 32,
      WALLET_HTTP2: true,
      WALLET_TLS_INSECURE: false,
      walletHostHeader: new URL(sim.url).host,
    },
    signer: hmacSigner(SECRET, 'sha256', 'hex'),
    onCall: walletCallObserver(logger, metrics),
  });
  const sessions = createSessionStore(redis, keys, 3600);
  const transactions = createTransactionStore(redis, keys, 3600);
  const duties = createDuties({ connection: bullRedis, prefix });
  const config: EngineConfig = {
    PROVIDER_ID: '18446744073709551615',
    GAME_URL_TEMPLATE: 'https://games.example/play?session={session_id}&game={game_id}',
    CURRENCY_DIGITS: { JPY: 0, BHD: 3 },
    DEFAULT_CURRENCY_DIGITS: 2,
    MULTI_BET_GAMES: ['multi-game'],
    RETRY_DELAY_UNIT: 'ms',
    WALLET_TIMEOUT_MS: timeout,
    ...options.config,
  };
  const engine = createEngine({ wallet, sessions, transactions, duties, config, clock: Date.now, logger });
  const app = createApp({ engine, engineApiKey: API_KEY, logger, metrics, bodyTimeoutMs: options.bodyTimeoutMs });
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    prefix,
    keys,
    sim,
    redis,
    sessions,
    transactions,
    duties,
    wallet,
    metrics,
    server,
    url,
    logs,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await duties.close();
      await wallet.close();
      await sim.close();
      await deletePrefix(prefix);
      await Promise.all([closeRedis(redis), closeRedis(bullRedis)]);
    },
  };
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

/** Waits for a condition with a deadline instead of sleeping a fixed time. */
export async function until(check: () => Promise<boolean> | boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
