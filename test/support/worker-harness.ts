import { randomUUID } from 'node:crypto';
import { loadGatewayConfig, loadWorkerConfig, type WorkerConfig } from '../../src/config/env';
import type { QueueDuties } from '../../src/duties/queues';
import { afterInlineAttempt } from '../../src/duties/settlement';
import { compensationFor } from '../../src/duties/compensation';
import { createClosers, startWith, type Closers } from '../../src/lib/lifecycle';
import { selfSignedCert } from '../../src/lib/self-signed-cert';
import { waitFor } from '../../src/lib/wait-for';
import { startGateway } from '../../src/main/gateway';
import { createLogger } from '../../src/observability/logger';
import { createMetrics } from '../../src/observability/metrics';
import type { RedisClient } from '../../src/store/redis';
import type { SessionStore } from '../../src/store/sessions';
import type { TransactionStore } from '../../src/store/transactions';
import type { NewTransaction, Session, TransactionRecord } from '../../src/store/types';
import { startSimulator, type RunningSimulator } from '../../src/sim';
import { encodeRequest, type SessionFields, type WalletClient, type WalletOutcome } from '../../src/wallet/protocol';
import { startWorker, type RunningWorker } from '../../workers/worker';
import { deletePrefix, redisUrl, testPrefix } from './prefix';
import { DEFAULT_TOKEN_SESSION_CAP } from '../../src/config/env';
import { exactDecimal } from '../../src/lib/money';

/**
 * Real Redis, the real simulator over HTTP, a real gateway (startGateway: its stores, wallet client
 * and duties are the gateway's side), and records made the way the gateway makes them (claim →
 * inline first attempt read by the shared settlement → store update → duties), so worker tests
 * drive the background exactly as production does; workers are the real startWorker.
 */
export const WALLET_USER = 'gateway-test';
export const WALLET_PASSWORD = 'test-password';
export const WALLET_SECRET = 'test-signing-secret';
export const PROVIDER_ID = '42';

export interface HarnessOptions {
  label: string;
  env?: Record<string, string>;
  /** The simulator behind TLS (a throwaway certificate): the gateway and the workers then talk HTTP/2 to it. */
  tls?: boolean;
}

export interface Player {
  session: Session;
  fields: SessionFields;
}

export interface Harness {
  readonly prefix: string;
  readonly sim: RunningSimulator;
  readonly redis: RedisClient;
  readonly store: TransactionStore;
  readonly sessions: SessionStore;
  /** The gateway's side: a client for the inline first attempt. */
  readonly wallet: WalletClient;
  readonly duties: QueueDuties;
  /** Environment of a worker (in-process through loadWorkerConfig, or a child process). */
  readonly env: Record<string, string>;
  /** The gateway's base URL (engine API, admin). */
  readonly url: string;
  config(overrides?: Record<string, string>): WorkerConfig;
  startWorker(overrides?: Record<string, string>): Promise<RunningWorker>;
  /** Authenticates a fresh token at the simulator and opens a gateway session for it. */
  newPlayer(): Promise<Player>;
  /** The same player on a fresh wallet token: another session, as a relaunch with a new token makes. */
  newToken(player: Player): Promise<Player>;
  /** A bet claimed and applied at the wallet whose answer never came (the inline call's outcome: unknown). */
  lostDebit(player: Player): Promise<{ bet: TransactionRecord; lost: WalletOutcome }>;
  /** The engine's `end` of the player's session, through the gateway. */
  endSession(player: Player): Promise<Response>;
  /** The wallet calls made with the player's token, in the order the wallet saw them. */
  tokenCalls(player: Player): string[];
  /** A debit claimed and applied at the wallet (a bet the engine got 200 for). */
  bet(player: Player, amount?: string, options?: { roundId?: string }): Promise<TransactionRecord>;
  /**
   * A win or refund of `bet` as the gateway handles it: claim, inline first attempt, settle, and
   * the retry job when the settlement says retry. Returns the inline outcome's next step kind.
   */
  settleInline(player: Player, kind: 'credit' | 'rollback', bet: TransactionRecord, options?: { id?: string; amount?: string }): Promise<{ id: string; next: string }>;
  /**
   * A bet, then a win of it settled inline (`settleInline`), with the wallet's faults for the win's
   * credit armed first by `arm` (it gets the credit's transaction id).
   */
  winAfter(player: Player, arm: (creditId: string) => void): Promise<{ bet: TransactionRecord; id: string }>;
  /** A claimed win or refund whose first attempt never happened (its lease ends after leaseMs). */
  claimOnly(player: Player, kind: 'credit' | 'rollback', bet: TransactionRecord, options?: { id?: string; leaseMs?: number }): Promise<TransactionRecord>;
  /** A bet claimed in a round of its own and not sent (what a gateway holds just before its wallet call). */
  claimDebit(player: Player, options?: { amount?: string; leaseMs?: number }): Promise<TransactionRecord>;
  /** A debit whose inline answer says compensate: the gateway's beginCompensation and its job. */
  refusedDebit(player: Player, amount?: string): Promise<{ debit: TransactionRecord; compensationId: string; outcome: WalletOutcome }>;
  /** Waits until the record of `id` is in `state` and returns it. */
  inState(id: string, state: string, timeoutMs?: number): Promise<TransactionRecord>;
  /** The workers started here, the gateway, the prefix's keys, the simulator: every step, in that order. */
  close(): Promise<void>;
}

let seq = 0;

/** A fresh win/refund id (at most 36 characters, as the contract allows). */
export function newId(kind: 'credit' | 'rollback'): string {
  return `${kind === 'credit' ? 'w' : 'r'}-${randomUUID().slice(0, 30)}`;
}

export async function startHarness(options: HarnessOptions): Promise<Harness> {
  const closers = createClosers();
  return startWith(closers, () => openHarness(options, closers));
}

async function openHarness(options: HarnessOptions, closers: Closers): Promise<Harness> {
  const prefix = testPrefix(options.label);
  const sim = await startSimulator({
    basicUser: WALLET_USER,
    basicPassword: WALLET_PASSWORD,
    signingSecret: WALLET_SECRET,
    ...(options.tls ? { tls: selfSignedCert() } : {}),
  });
  closers.defer('simulator', () => sim.close());
  closers.defer('prefix', () => deletePrefix(prefix));
  const env: Record<string, string> = {
    REDIS_URL: redisUrl(),
    QUEUE_PREFIX: prefix,
    WALLET_BASE_URL: sim.url,
    WALLET_BASIC_USER: WALLET_USER,
    WALLET_BASIC_PASSWORD: WALLET_PASSWORD,
    WALLET_SIGNING_SECRET: WALLET_SECRET,
    WALLET_TIMEOUT_MS: '1000',
    PROVIDER_ID,
    RETRY_DELAY_UNIT: 'ms',
    SWEEP_INTERVAL_MS: '60000',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    WORKER_CONCURRENCY: '20',
    ...(options.tls ? { WALLET_TLS_INSECURE: 'true' } : {}),
    ...options.env,
  };
  const config = (overrides: Record<string, string> = {}): WorkerConfig => loadWorkerConfig({ ...env, ...overrides });
  // The gateway's side: its Redis, stores, wallet client and duties, as `npm start` wires them.
  const gatewayConfig = loadGatewayConfig({ ...env, PORT: '0', ENGINE_API_KEY: 'worker-harness-engine-key', GATEWAY_PROCESSES: '1', SESSION_TTL_SECONDS: '3600', RECORD_RETENTION_SECONDS: '3600' });
  const gateway = await startGateway(gatewayConfig, createLogger({ level: gatewayConfig.LOG_LEVEL, name: 'test-gateway' }), {
    host: '127.0.0.1',
    metrics: createMetrics({ defaultMetrics: false }),
    drainTimeoutMs: 0,
  });
  closers.defer('gateway', () => gateway.close());
  const { redis, transactions: store, sessions, wallet, duties } = gateway.parts;

  async function newPlayer(): Promise<Player> {
    seq += 1;
    return openSession({
      token: randomUUID(),
      player_id: String(7_000_000_000_000_000_000n + BigInt(seq) * 1000n + BigInt(process.pid % 1000)),
      site_id: '7',
      provider_id: PROVIDER_ID,
      game_id: 'slot-1',
      currency: 'EUR',
    });
  }

  async function openSession(fields: SessionFields): Promise<Player> {
    const auth = await wallet.call('authenticate', fields);
    if (auth.kind !== 'ok') throw new Error(`authenticate failed: ${JSON.stringify(auth)}`);
    const session = (await sessions.create(
      { token: fields.token, playerId: fields.player_id, siteId: fields.site_id, currency: 'EUR', gameId: 'slot-1', balance: auth.response.balance },
      Date.now(), DEFAULT_TOKEN_SESSION_CAP,
    )).session!;
    return { session, fields };
  }

  function newRecord(player: Player, kind: 'debit' | 'credit' | 'rollback', id: string, roundId: string, amount: string, reference: string | null): NewTransaction {
    const common = { ...player.fields, amount, round_id: roundId, transaction_id: id };
    const walletBody =
      kind === 'debit'
        ? encodeRequest('debit', { ...common, round_closed: false })
        : encodeRequest(kind, { ...common, reference_transaction_id: reference!, round_closed: true });
    return {
      transactionId: id,
      kind,
      sessionId: player.session.sessionId, tokenRef: player.session.tokenRef,
      playerId: player.fields.player_id,
      siteId: player.fields.site_id,
      roundId,
      walletRoundId: roundId,
      amount,
      currency: 'EUR',
      roundClosed: kind !== 'debit',
      referenceTransactionId: reference,
      bodyHash: `hash-${id}`,
      walletOperation: kind,
      walletBody,
      isCompensation: false,
      createdAt: Date.now(),
    };
  }

  async function claim(record: NewTransaction, leaseMs = 10_000): Promise<TransactionRecord> {
    const result = await store.claim({ record, exactAmount: exactDecimal(record.amount), leaseUntil: Date.now() + leaseMs });
    if (result.kind !== 'claimed') throw new Error(`claim ${record.transactionId}: ${result.kind}`);
    return (await store.get(record.transactionId))!;
  }

  const harness: Harness = {
    prefix,
    sim,
    redis,
    store,
    sessions,
    wallet,
    duties,
    env,
    url: gateway.url,
    config,
    async startWorker(overrides = {}) {
      const cfg = config(overrides);
      const running = await startWorker({ config: cfg, logger: createLogger({ level: cfg.LOG_LEVEL, name: 'test-worker' }) });
      closers.defer('worker', () => running.close());
      return running;
    },
    newPlayer,
    newToken: (player) => openSession({ ...player.fields, token: randomUUID() }),

    async lostDebit(player) {
      const bet = await harness.claimDebit(player);
      sim.faults.applyThenDrop('debit', 1, { mode: 'hang' });
      const lost = await wallet.send('debit', bet.walletBody);
      if (lost.kind !== 'unknown') throw new Error(`the lost debit was answered: ${JSON.stringify(lost)}`);
      return { bet, lost };
    },

    endSession: (player) =>
      fetch(`${gateway.url}/engine/v1/sessions/${player.session.sessionId}/end`, { method: 'POST', headers: { authorization: 'Bearer worker-harness-engine-key', 'content-type': 'application/json' }, body: '{}' }),

    tokenCalls: (player) => sim.calls().filter((c) => c.body?.token === player.fields.token).map((c) => c.operation),

    async bet(player, amount = '10.00', opts = {}) {
      const id = `b-${randomUUID().slice(0, 30)}`;
      const record = await claim(newRecord(player, 'debit', id, opts.roundId ?? randomUUID(), amount, null));
      const outcome = await wallet.send('debit', record.walletBody);
      const next = afterInlineAttempt({ record, outcome, unit: 'ms', now: Date.now() });
      if (next.kind !== 'settle' || !(await store.settle(record, next.update))) throw new Error(`bet ${id} not settled: ${JSON.stringify(outcome)}`);
      return (await store.get(id))!;
    },

    async settleInline(player, kind, bet, opts = {}) {
      const id = opts.id ?? newId(kind);
      const amount = opts.amount ?? (kind === 'rollback' ? bet.amount : '25.00');
      const record = await claim(newRecord(player, kind, id, bet.roundId, amount, bet.transactionId));
      const outcome = await wallet.send(kind, record.walletBody);
      const next = afterInlineAttempt({ record, outcome, unit: 'ms', now: Date.now() });
      if (next.kind === 'settle' || next.kind === 'retry') await store.settle(record, next.update);
      if (next.kind === 'retry') await duties.enqueueRetry(record, next.delayMs);
      return { id, next: next.kind };
    },

    async winAfter(player, arm) {
      const bet = await harness.bet(player);
      const id = newId('credit');
      arm(id);
      await harness.settleInline(player, 'credit', bet, { id });
      return { bet, id };
    },

    claimDebit(player, opts = {}) {
      return claim(newRecord(player, 'debit', `b-${randomUUID().slice(0, 30)}`, randomUUID(), opts.amount ?? '10.00', null), opts.leaseMs ?? 10_000);
    },

    async claimOnly(player, kind, bet, opts = {}) {
      const amount = kind === 'rollback' ? bet.amount : '25.00';
      return claim(newRecord(player, kind, opts.id ?? newId(kind), bet.roundId, amount, bet.transactionId), opts.leaseMs ?? 10_000);
    },

    async refusedDebit(player, amount = '10.00') {
      const id = `b-${randomUUID().slice(0, 30)}`;
      const record = await claim(newRecord(player, 'debit', id, randomUUID(), amount, null));
      const outcome = await wallet.send('debit', record.walletBody);
      const next = afterInlineAttempt({ record, outcome, unit: 'ms', now: Date.now() });
      if (next.kind !== 'compensate') throw new Error(`debit ${id} was not refused for compensation: ${JSON.stringify(outcome)}`);
      const started = await store.beginCompensation({
        debit: record,
        error: next.error,
        ...next.progress,
        compensation: compensationFor(record, Date.now()),
        leaseUntil: Date.now() + 10_000,
      });
      if (started.kind === 'not_pending') throw new Error('compensation not started');
      await duties.enqueueRetry({ ...record, transactionId: started.compensationId }, 0);
      return { debit: (await store.get(id))!, compensationId: started.compensationId, outcome };
    },

    inState(id, state, timeoutMs = 20_000) {
      return waitFor(`${id} ${state}`, async () => {
        const record = await store.get(id);
        return record?.state === state ? record : undefined;
      }, timeoutMs);
    },

    close: () => closers.closeAll(),
  };
  return harness;
}

/** Calls the simulator saw for one transaction id, in order. */
export function callsFor(sim: RunningSimulator, transactionId: string, operation?: string) {
  return sim.calls().filter((c) => c.transactionId === transactionId && (operation === undefined || c.operation === operation));
}
