import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import request from 'supertest';
import { loadGatewayConfig } from '../../src/config/env';
import type { Child } from '../../src/lib/child';
import { createClosers, startWith } from '../../src/lib/lifecycle';
import { waitFor } from '../../src/lib/wait-for';
import { startGateway, type RunningGateway } from '../../src/main/gateway';
import { createLogger } from '../../src/observability/logger';
import { createMetrics } from '../../src/observability/metrics';
import { walletLayout } from '../../src/registry/wallet-layout';
import { reinstateWallet, retireWallet } from '../../src/registry/wallet-retire';
import { startSimulator, type RunningSimulator } from '../../src/sim';
import { Code } from '../../src/wallet/codes';
import { body, newPlayerId, uniqueId } from '../support/gateway-harness';
import { logSink } from '../support/log-sink';
import { deletePrefix, redisUrl, testPrefix } from '../support/prefix';
import { spawnEntry, startWorkerProcess } from '../support/processes';

/**
 * Reload without restart (contract 11), through the real gateway, a real worker process and real
 * simulators over HTTP, on real Redis: POST /admin/api/registry/reload reaches every process over
 * Redis and answers with each one's result; SIGHUP reloads the one process it is sent to.
 */
const SIM = { user: 'gw', password: 'pw-sim-secret-0001', secret: 'sign-sim-secret-0002' } as const;
const KEYS = { x1: 'studio-x-key-0003', x2: 'studio-x-key-next-0004' } as const;
const ADMIN = { user: 'ops', password: 'ops-password-0005' } as const;
const HIDDEN_ENV_VALUE = 'never-shown-0006';
/** casino-b as the change test left it. */
const B_CHANGED = { 'casino-b': { provider_id: '77', max_in_flight: 50, timeout_ms: 3000 } };
const SECRETS = [SIM.password, SIM.secret, KEYS.x1, KEYS.x2, ADMIN.password, HIDDEN_ENV_VALUE];

let prefix: string;
let file: string;
const sims = new Map<string, RunningSimulator>();
let gateway: RunningGateway;
let worker: Child;
const gatewayLogs = logSink();
const answers: string[] = [];
const closers = createClosers();

const walletAt = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  base_url: sims.get(id)!.url,
  basic_user: SIM.user,
  basic_password: SIM.password,
  signing_secret: SIM.secret,
  provider_id: '5',
  timeout_ms: 2000,
  ...extra,
});

/** Writes the registry: these wallets (each at its simulator), engine studio-x with `keys` on all of them. */
function writeRegistry(ids: readonly string[], keys: readonly unknown[] = [KEYS.x1], extra: Record<string, Record<string, unknown>> = {}): void {
  writeFileSync(file, JSON.stringify({ wallets: ids.map((id) => walletAt(id, extra[id])), engines: [{ id: 'studio-x', keys, wallets: ids }] }));
}

function kept<T extends { text: string }>(res: T): T {
  answers.push(res.text);
  return res;
}

async function reload() {
  return kept(await request(gateway.url).post('/admin/api/registry/reload').auth(ADMIN.user, ADMIN.password));
}

async function launch(walletId: string, token = uniqueId('tok'), playerId = newPlayerId()) {
  return kept(await request(gateway.url).get(`/launch/${walletId}`).query({ token, player_id: playerId, site_id: '7', currency: 'EUR', game_id: 'slot-1' }).set('Accept', 'application/json'));
}

async function call(key: string, sessionId: string, action: string, fields: Record<string, unknown> = {}) {
  return kept(await request(gateway.url).post(`/engine/v1/sessions/${encodeURIComponent(sessionId)}/${action}`).set('Authorization', `Bearer ${key}`).set('Content-Type', 'application/json').send(body(fields)));
}

const sessionOf = (res: { body: unknown }) => (res.body as { session_id: string }).session_id;

beforeAll(async () => {
  prefix = testPrefix('reload');
  await startWith(closers, async () => {
    for (const id of ['default', 'casino-b', 'casino-c', 'casino-d', 'casino-e']) {
      const sim = await startSimulator({ basicUser: SIM.user, basicPassword: SIM.password, signingSecret: SIM.secret });
      sims.set(id, sim);
      closers.defer(`simulator ${id}`, () => sim.close());
    }
    closers.defer('redis', () => deletePrefix(prefix));
    file = join(mkdtempSync(join(tmpdir(), 'wgw-reload-')), 'wallets.json');
    writeRegistry(['default', 'casino-b']);
    const env = { REDIS_URL: redisUrl(), QUEUE_PREFIX: prefix, WALLETS_FILE: file, RETRY_DELAY_UNIT: 'ms', HIDDEN_VALUE: HIDDEN_ENV_VALUE };
    worker = await startWorkerProcess(env);
    closers.defer('worker', () => worker.stop());
    const config = loadGatewayConfig({ ...env, PORT: '0', GATEWAY_PROCESSES: '1', ADMIN_USER: ADMIN.user, ADMIN_PASSWORD: ADMIN.password });
    gateway = await startGateway(config, createLogger({ level: 'debug', name: 'reload-gateway', destination: gatewayLogs.destination }), {
      host: '127.0.0.1',
      metrics: createMetrics({ defaultMetrics: false }),
      drainTimeoutMs: 0,
    });
    closers.defer('gateway', () => gateway.close());
  });
});

afterAll(async () => {
  await closers.closeAll();
});

describe('POST /admin/api/registry/reload', () => {
  it('an added wallet serves at once: launch, bet, and its retries run in the worker process', async () => {
    expect((await launch('casino-c')).status).toBe(404);
    writeRegistry(['default', 'casino-b', 'casino-c']);
    const res = await reload();
    expect(res.body).toMatchObject({ state: 'reloaded', added: ['casino-c'], removed: [], changed: [] });
    expect(res.status).toBe(200);
    // Each live process answered: this gateway and the worker process.
    const processes = (res.body as { processes: { kind: string; pid: number; ok: boolean; added: string[] }[] }).processes;
    expect(processes.map((p) => [p.kind, p.pid, p.ok, p.added]).sort()).toEqual(
      [
        ['gateway', process.pid, true, ['casino-c']],
        ['worker', worker.pid, true, ['casino-c']],
      ].sort(),
    );

    // The operators' pages are built again over the new registry.
    const listed = kept(await request(gateway.url).get('/admin/api/wallets').auth(ADMIN.user, ADMIN.password));
    expect((listed.body as { wallets: { id: string }[] }).wallets.map((w) => w.id)).toEqual(['default', 'casino-b', 'casino-c']);

    const launched = await launch('casino-c');
    expect(launched.status).toBe(200);
    const sessionId = sessionOf(launched);
    expect(sessionId.startsWith('casino-c~')).toBe(true);
    const bet = uniqueId('bet');
    const win = uniqueId('win');
    expect((await call(KEYS.x1, sessionId, 'bet', { round_id: 'r', transaction_id: bet, amount: '1.00' })).status).toBe(200);
    // The win is refused once: answered 202, and the worker process's new lane sends it again.
    sims.get('casino-c')!.faults.failNext('credit', 1, Code.ClientError, { transactionId: win });
    expect((await call(KEYS.x1, sessionId, 'win', { round_id: 'r', transaction_id: win, bet_transaction_id: bet, amount: '2.00' })).status).toBe(202);
    await waitFor('the worker process sends the win again', () => sims.get('casino-c')!.walletCalls().filter((c) => c.operation === 'credit' && c.transactionId === win).length >= 2, 15_000, { alive: () => worker.isRunning() });
    expect(sims.get('default')!.walletCalls().filter((c) => c.transactionId === win)).toEqual([]);
  });

  it('rotates an engine key: old and new both work, then the old one removed stops', async () => {
    const sessionId = sessionOf(await launch('default'));
    expect((await call(KEYS.x2, sessionId, 'balance')).status).toBe(401);
    writeRegistry(['default', 'casino-b', 'casino-c'], [KEYS.x1, KEYS.x2]);
    expect((await reload()).body).toMatchObject({ state: 'reloaded', engines_changed: ['studio-x'] });
    expect((await call(KEYS.x1, sessionId, 'balance')).status).toBe(200);
    expect((await call(KEYS.x2, sessionId, 'balance')).status).toBe(200);
    writeRegistry(['default', 'casino-b', 'casino-c'], [KEYS.x2]);
    expect((await reload()).status).toBe(200);
    expect((await call(KEYS.x1, sessionId, 'balance')).status).toBe(401);
    expect((await call(KEYS.x2, sessionId, 'balance')).status).toBe(200);
  });

  it('a changed wallet applies to the next call (here its provider id, max_in_flight and timeout)', async () => {
    const sessionId = sessionOf(await launch('casino-b'));
    writeRegistry(['default', 'casino-b', 'casino-c'], [KEYS.x2], { 'casino-b': { provider_id: '77', max_in_flight: 50, timeout_ms: 3000 } });
    expect((await reload()).body).toMatchObject({ state: 'reloaded', changed: ['casino-b'] });
    const bet = uniqueId('bet');
    expect((await call(KEYS.x2, sessionId, 'bet', { round_id: 'r', transaction_id: bet, amount: '1.00' })).status).toBe(200);
    const debits = sims.get('casino-b')!.walletCalls().filter((c) => c.operation === 'debit' && c.transactionId === bet);
    expect(debits).toHaveLength(1);
    expect(debits[0]!.body).toMatchObject({ provider_id: '77' });
  });

  it('a broken file is refused whole: 422 naming the field, no value; the old registry keeps serving and no process is asked', async () => {
    writeFileSync(
      file,
      JSON.stringify({
        wallets: [walletAt('default'), walletAt('casino-b', { basic_password: { env: 'RELOAD_TEST_UNSET' } }), walletAt('casino-e', { signing_secret: { env: 'HIDDEN_VALUE' }, max_in_flight: -1 })],
        engines: [{ id: 'studio-x', keys: [KEYS.x2], wallets: ['default', 'casino-b', 'casino-e'] }],
      }),
    );
    const res = await reload();
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ state: 'failed', error: { code: 'REGISTRY_INVALID' } });
    const message = (res.body as { error: { message: string } }).error.message;
    expect(message).toContain('wallets[1].basic_password');
    expect(message).toContain('wallets[2].max_in_flight');
    expect(res.body).not.toHaveProperty('processes');

    writeFileSync(file, '{ "wallets": [ { "id": "default", "basic_password": "pw-sim-secret-0001", ');
    const notJson = await reload();
    expect(notJson.status).toBe(422);
    expect((notJson.body as { error: { message: string } }).error.message).toContain('not valid JSON');

    // The registry of before: casino-e unknown, casino-c and the rotated key serving.
    expect((await launch('casino-e')).status).toBe(404);
    const launched = await launch('casino-c');
    expect(launched.status).toBe(200);
    expect((await call(KEYS.x2, sessionOf(launched), 'balance')).status).toBe(200);
    writeRegistry(['default', 'casino-b', 'casino-c'], [KEYS.x2], B_CHANGED);
    // The processes still hold the registry of before: the file as it was changes nothing in any.
    const unchanged = await reload();
    expect(unchanged.status).toBe(200);
    for (const p of (unchanged.body as { processes: Record<string, unknown>[] }).processes) expect(p).toMatchObject({ ok: true, added: [], removed: [], changed: [], engines_changed: [] });
  });

  it('refuses to remove a wallet with an open session and pending work, names it, and changes nothing', async () => {
    const launched = await launch('casino-c');
    const sessionId = sessionOf(launched);
    const bet = uniqueId('bet');
    const win = uniqueId('win');
    expect((await call(KEYS.x2, sessionId, 'bet', { round_id: 'r', transaction_id: bet, amount: '1.00' })).status).toBe(200);
    sims.get('casino-c')!.faults.failNext('credit', 1000, Code.ClientError, { transactionId: win });
    expect((await call(KEYS.x2, sessionId, 'win', { round_id: 'r', transaction_id: win, bet_transaction_id: bet, amount: '2.00' })).status).toBe(202);

    writeRegistry(['default', 'casino-b'], [KEYS.x2], B_CHANGED);
    const res = await reload();
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ state: 'failed', error: { code: 'WALLET_IN_USE', message: expect.stringContaining('casino-c (') } });
    const use = (res.body as { in_use: { wallet: string; sessions: number; pending: number }[] }).in_use;
    expect(use).toEqual([expect.objectContaining({ wallet: 'casino-c' })]);
    expect(use[0]!.sessions).toBeGreaterThanOrEqual(1);
    expect(use[0]!.pending).toBeGreaterThanOrEqual(1);
    // Nothing changed: casino-c still launches and plays.
    const again = await launch('casino-c');
    expect(again.status).toBe(200);
    expect((await call(KEYS.x2, sessionOf(again), 'balance')).status).toBe(200);
    sims.get('casino-c')!.faults.clear();
    writeRegistry(['default', 'casino-b', 'casino-c'], [KEYS.x2], B_CHANGED);
  });

  it('removes a wallet nothing uses: its launches are refused from then on, and its Redis mark holds them off in every process', async () => {
    writeRegistry(['default', 'casino-b', 'casino-c', 'casino-e'], [KEYS.x2], B_CHANGED);
    expect((await reload()).body).toMatchObject({ state: 'reloaded', added: ['casino-e'] });
    writeRegistry(['default', 'casino-b', 'casino-c'], [KEYS.x2], B_CHANGED);
    const res = await reload();
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ state: 'reloaded', removed: ['casino-e'] });
    expect((await launch('casino-e')).status).toBe(404);
    const redis = new Redis(redisUrl());
    try {
      expect(await redis.exists(walletLayout({ QUEUE_PREFIX: prefix, redisShards: 1 }, 'casino-e').keys(0).retired())).toBe(1);
    } finally {
      redis.disconnect();
    }
  });

  it('a launch during a removal check gets 404 WALLET_NOT_FOUND and opens no session (the mark is checked in the launch script)', async () => {
    const redis = new Redis(redisUrl());
    try {
      const layout = walletLayout({ QUEUE_PREFIX: prefix, redisShards: 1 }, 'casino-b');
      // The first step of a removal: casino-b is marked while it is still in every registry.
      const token = uniqueId('tok');
      const playerId = newPlayerId();
      const sessionsBefore = (await redis.keys(`${prefix}:w:casino-b:session:*`)).length;
      const marked = await retireWallet(redis, 'casino-b', layout);
      // casino-b has sessions from the tests above: the look refuses, and takes its mark away.
      expect(marked.ok).toBe(false);
      expect(await redis.exists(layout.keys(0).retired())).toBe(0);
      await redis.set(layout.keys(0).retired(), '1');
      const res = await launch('casino-b', token, playerId);
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ error: { code: 'WALLET_NOT_FOUND' } });
      expect((await redis.keys(`${prefix}:w:casino-b:session:*`)).length).toBe(sessionsBefore);
      await reinstateWallet(redis, layout);
      expect((await launch('casino-b', token, playerId)).status).toBe(200);
    } finally {
      redis.disconnect();
    }
  });

  it('a process present that does not answer in time is listed as NO_ANSWER: 503 RELOAD_INCOMPLETE, the others applied it', async () => {
    const redis = new Redis(redisUrl());
    // A process that keeps its presence but never answers (stuck).
    const stuck = JSON.stringify({ kind: 'worker', pid: 999_999, host: 'stuck-host', id: 'stuck-process' });
    try {
      await redis.zadd(`${prefix}:registry-processes`, Date.now() + 60_000, stuck);
      const res = await reload();
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({ state: 'failed', error: { code: 'RELOAD_INCOMPLETE' } });
      const processes = (res.body as { processes: { id: string; kind: string; ok: boolean; error?: { code: string } }[] }).processes;
      expect(processes.find((p) => p.id === 'stuck-process')).toMatchObject({ kind: 'worker', pid: 999_999, ok: false, error: { code: 'NO_ANSWER' } });
      expect(processes.filter((p) => p.id !== 'stuck-process').map((p) => [p.kind, p.ok]).sort()).toEqual([['gateway', true], ['worker', true]]);
    } finally {
      await redis.zrem(`${prefix}:registry-processes`, stuck);
      redis.disconnect();
    }
  });

  it('needs the admin credentials and refuses a change from another origin', async () => {
    expect((await request(gateway.url).post('/admin/api/registry/reload')).status).toBe(401);
    const cross = await request(gateway.url).post('/admin/api/registry/reload').auth(ADMIN.user, ADMIN.password).set('Sec-Fetch-Site', 'cross-site');
    expect(cross.status).toBe(403);
  });
});

describe('without WALLETS_FILE', () => {
  it('answers 409 NOTHING_TO_RELOAD: the single-wallet variables are read at start only', async () => {
    const single = await startGateway(
      loadGatewayConfig({
        REDIS_URL: redisUrl(),
        QUEUE_PREFIX: prefix,
        PORT: '0',
        GATEWAY_PROCESSES: '1',
        WALLET_BASE_URL: sims.get('default')!.url,
        WALLET_BASIC_USER: SIM.user,
        WALLET_BASIC_PASSWORD: SIM.password,
        WALLET_SIGNING_SECRET: SIM.secret,
        PROVIDER_ID: '5',
        ENGINE_API_KEY: KEYS.x1,
        ADMIN_USER: ADMIN.user,
        ADMIN_PASSWORD: ADMIN.password,
      }),
      createLogger({ level: 'debug', name: 'reload-single', destination: gatewayLogs.destination }),
      { host: '127.0.0.1', metrics: createMetrics({ defaultMetrics: false }), drainTimeoutMs: 0 },
    );
    try {
      const res = kept(await request(single.url).post('/admin/api/registry/reload').auth(ADMIN.user, ADMIN.password));
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({ state: 'failed', error: { code: 'NOTHING_TO_RELOAD' } });
      expect(await single.reload()).toMatchObject({ ok: false, error: { code: 'NOTHING_TO_RELOAD' } });
    } finally {
      await single.close();
    }
  });
});

describe('SIGHUP', () => {
  it('reloads the one process it is sent to', async () => {
    writeRegistry(['default', 'casino-b', 'casino-c', 'casino-d'], [KEYS.x2], B_CHANGED);
    const before = worker.output().length;
    process.kill(worker.pid, 'SIGHUP');
    const reloaded = () => worker.output().slice(before);
    await waitFor('the worker process reloads', () => reloaded().includes('"msg":"registry reloaded"') && reloaded().includes('"added":["casino-d"]'), 15_000, { alive: () => worker.isRunning(), context: reloaded });
    expect(worker.isRunning()).toBe(true);
    // The gateway was not asked: casino-d is not in its registry.
    expect((await launch('casino-d')).status).toBe(404);
    // The admin route brings the gateway level with it; the worker has nothing more to change.
    const res = await reload();
    expect(res.body).toMatchObject({ state: 'reloaded', added: ['casino-d'] });
    const worker_ = (res.body as { processes: { kind: string; added: string[] }[] }).processes.find((p) => p.kind === 'worker');
    expect(worker_).toMatchObject({ ok: true, added: [] });
    expect((await launch('casino-d')).status).toBe(200);
  });
});

describe('SIGHUP to the gateway command', () => {
  it('with GATEWAY_PROCESSES=2 the primary passes it on, and each gateway process reloads', async () => {
    const gatewayProcess = await spawnEntry('src/main/gateway.ts', { REDIS_URL: redisUrl(), QUEUE_PREFIX: prefix, WALLETS_FILE: file, PORT: '0', GATEWAY_PROCESSES: '2', LOG_LEVEL: 'info' });
    try {
      const output = () => gatewayProcess.output();
      const count = (needle: string) => output().split(needle).length - 1;
      await waitFor('both gateway processes listen', () => count('"msg":"gateway listening"') === 2, 30_000, { alive: () => gatewayProcess.isRunning(), context: output });
      writeRegistry(['default', 'casino-b', 'casino-c', 'casino-d', 'casino-e'], [KEYS.x2], B_CHANGED);
      process.kill(gatewayProcess.pid, 'SIGHUP');
      await waitFor('both gateway processes reload', () => count('"msg":"registry reloaded"') === 2 && output().includes('"casino-e"]'), 15_000, { alive: () => gatewayProcess.isRunning(), context: output });
      expect(gatewayProcess.isRunning()).toBe(true);
    } finally {
      await gatewayProcess.stop();
    }
  }, 60_000);
});

describe('secrets', () => {
  it('no secret value in any answer, the gateway log or the worker log', () => {
    const texts = [...answers, ...gatewayLogs.logs, worker.output()];
    for (const secret of SECRETS) for (const text of texts) expect(text).not.toContain(secret);
  });
});
