import { tokenRefOf } from '../../src/store/sessions';
import { Queue } from 'bullmq';
import type Redis from 'ioredis';
import request from 'supertest';
import { loadGatewayConfig } from '../../src/config/env';
import { QUEUE_NAMES, retryJobId } from '../../src/duties/queues';
import { startGateway, type RunningGateway } from '../../src/main/gateway';
import { createLogger } from '../../src/observability/logger';
import { startSimulator, type RunningSimulator } from '../../src/sim/index';
import { shardLayout } from '../../src/store/shards';
import { closeRedis, createRedis } from '../../src/store/redis';
import { createSessionStore } from '../../src/store/sessions';
import { createTransactionStore, type TransactionStore } from '../../src/store/transactions';
import type { NewTransaction } from '../../src/store/types';
import { encodeRequest } from '../../src/wallet/protocol';
import { deletePrefix, redisUrl, testPrefix } from '../support/prefix';
import { wiredEnv, WIRED_WALLET } from '../support/wired-gateway';
import { logSink } from '../support/log-sink';
import { DEFAULT_TOKEN_SESSION_CAP } from '../../src/config/env';
import { exactDecimal } from '../../src/lib/money';

/**
 * The admin pages through the real gateway process wiring (startGateway): Basic auth, Bull Board
 * and the transactions API over real Redis; records are made through the store directly.
 */
const prefix = testPrefix('operators-admin');
const ADMIN = { user: 'ops', password: 'ops-password-123' };
const PLAYER = '18446744073709551615';

let sim: RunningSimulator;
let gateway: RunningGateway;
let closedGateway: RunningGateway;
let redis: Redis;
let transactions: TransactionStore;
let sessionId: string;
const { logs, destination } = logSink();

function basic(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}
const auth = basic(ADMIN.user, ADMIN.password);

/** The console's audit entries about one transaction, newest first: action, result, states, user, note. */
async function auditOf(transactionId: string): Promise<string[][]> {
  const res = await request(gateway.url).get('/admin/api/audit').set('Authorization', auth).expect(200);
  type Entry = { transactionId: string; action: string; result: string; stateBefore: string; stateAfter: string; user: string; note: string };
  return (res.body.entries as Entry[]).filter((e) => e.transactionId === transactionId).map((e) => [e.action, e.result, e.stateBefore, e.stateAfter, e.user, e.note]);
}

function configFor(withAdmin: boolean) {
  return loadGatewayConfig({
    ...wiredEnv(prefix, sim.url),
    ...(withAdmin ? { ADMIN_USER: ADMIN.user, ADMIN_PASSWORD: ADMIN.password } : {}),
  });
}

/** A credit record made through the store, then ended `dead` as exhausted retries leave it. */
async function deadCredit(id: string, round: string): Promise<void> {
  const fields = { token: 'secret-wallet-token', player_id: PLAYER, site_id: '7', provider_id: '1', game_id: 'g', currency: 'EUR', amount: '5.00', round_id: round };
  const now = Date.now();
  const base = { sessionId, tokenRef: tokenRefOf('secret-wallet-token'), playerId: PLAYER, siteId: '7', roundId: round, walletRoundId: round, amount: '5.00', currency: 'EUR', isCompensation: false, createdAt: now };
  const bet: NewTransaction = {
    ...base,
    transactionId: `${id}-bet`,
    kind: 'debit',
    roundClosed: false,
    referenceTransactionId: null,
    bodyHash: `h-${id}-bet`,
    walletOperation: 'debit',
    walletBody: encodeRequest('debit', { ...fields, transaction_id: `${id}-bet`, round_closed: false }),
  };
  const win: NewTransaction = {
    ...base,
    transactionId: id,
    kind: 'credit',
    roundClosed: true,
    referenceTransactionId: `${id}-bet`,
    bodyHash: `h-${id}`,
    walletOperation: 'credit',
    walletBody: encodeRequest('credit', { ...fields, transaction_id: id, reference_transaction_id: `${id}-bet`, round_closed: true }),
  };
  expect(await transactions.claim({ record: bet, exactAmount: exactDecimal(bet.amount), leaseUntil: now })).toEqual({ kind: 'claimed', sessionBalance: '100.00' });
  expect(await transactions.settle(bet, { state: 'succeeded', expect: ['pending'], attempts: 1, lastWalletCode: 1, history: [1] })).toBe(true);
  expect(await transactions.claim({ record: win, exactAmount: exactDecimal(win.amount), leaseUntil: now })).toEqual({ kind: 'claimed', sessionBalance: '100.00' });
  const record = (await transactions.get(id))!;
  const history = [2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2];
  const settled = await transactions.settle(record, {
    state: 'dead',
    expect: ['pending'],
    attempts: history.length,
    lastWalletCode: 2,
    history,
    error: { code: 'WALLET_REJECTED', walletCode: 2, message: 'retries exhausted', httpStatus: 503 },
    note: 'retries exhausted',
  });
  expect(settled).toBe(true);
}

beforeAll(async () => {
  sim = await startSimulator({ basicUser: WIRED_WALLET.user, basicPassword: WIRED_WALLET.password, signingSecret: WIRED_WALLET.secret });
  const logger = createLogger({ level: 'info', name: 'operators-admin-test', destination });
  gateway = await startGateway(configFor(true), logger, { host: '127.0.0.1' });
  closedGateway = await startGateway(configFor(false), logger, { host: '127.0.0.1' });
  redis = createRedis(redisUrl());
  transactions = createTransactionStore(redis, shardLayout(prefix, 1), 3600);
  const session = (await createSessionStore(redis, shardLayout(prefix, 1), 3600).create(
    { token: 'secret-wallet-token', playerId: PLAYER, siteId: '7', currency: 'EUR', gameId: 'g', balance: '100.00' },
    Date.now(), DEFAULT_TOKEN_SESSION_CAP,
  )).session!;
  sessionId = session.sessionId;
});

afterAll(async () => {
  await gateway.close();
  await closedGateway.close();
  await deletePrefix(prefix);
  await closeRedis(redis);
  await sim.close();
});

describe('admin auth', () => {
  it.each([
    ['no credentials', undefined],
    ['a wrong password', basic(ADMIN.user, 'wrong')],
    ['a wrong user', basic('someone', ADMIN.password)],
    ['not Basic', 'Bearer engine-key'],
  ])('answers 401 with WWW-Authenticate: Basic for %s', async (_label, header) => {
    const req = request(gateway.url).get('/admin/transactions/x1');
    if (header !== undefined) req.set('Authorization', header);
    const res = await req.expect(401);
    expect(res.headers['www-authenticate']).toMatch(/^Basic realm=/);
    expect(res.body).toEqual({
      state: 'failed',
      error: { code: 'UNAUTHORIZED', wallet_code: null, message: expect.any(String) },
      request_id: res.headers['x-request-id'],
    });
  });

  it('guards Bull Board and its API the same way', async () => {
    await request(gateway.url).get('/admin/queues').expect(401);
    await request(gateway.url).get('/admin/queues/api/queues').expect(401);
  });

  it('does not exist when ADMIN_USER/ADMIN_PASSWORD are not set', async () => {
    for (const path of ['/admin/queues', '/admin/transactions/x1', '/admin/transactions?state=dead']) {
      const res = await request(closedGateway.url).get(path).set('Authorization', auth).expect(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
    }
  });
});

describe('Bull Board', () => {
  it('serves its page and lists every queue of the project', async () => {
    const page = await request(gateway.url).get('/admin/queues').set('Authorization', auth).expect(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    expect(page.text).toContain('<base href="/admin/queues/"');
    // its script bundles load from under the same guarded path
    const script = /src="(static\/js\/main\.[^"]+\.js)"/.exec(page.text)?.[1];
    expect(script).toBeDefined();
    await request(gateway.url).get(`/admin/queues/${script}`).set('Authorization', auth).expect(200);

    const api = await request(gateway.url).get('/admin/queues/api/queues').set('Authorization', auth).expect(200);
    const names = (api.body.queues as { name: string }[]).map((q) => q.name).sort();
    expect(names).toEqual(Object.values(QUEUE_NAMES).sort());
  });

  it('loads nothing from another host: no font link to Google, and a policy that allows this host only', async () => {
    const page = await request(gateway.url).get('/admin/queues').set('Authorization', auth).expect(200);
    expect(page.text).not.toMatch(/(href|src)="(https?:)?\/\//);
    expect(page.text).not.toContain('fonts.googleapis.com');
    const policy = String(page.headers['content-security-policy']);
    expect(policy).toContain("default-src 'self'");
    expect(policy).not.toMatch(/https?:/);
    expect(page.headers['x-content-type-options']).toBe('nosniff');
  });
});

describe('admin transactions API', () => {
  it('shows a record with the operator fields and never the wallet body or token', async () => {
    await deadCredit('adm-look', 'round-look');
    const res = await request(gateway.url).get('/admin/transactions/adm-look').set('Authorization', auth).expect(200);
    // the record itself at the top level, the operator fields beside its own
    expect(res.body).not.toHaveProperty('transaction');
    expect(res.body).toMatchObject({
      transaction_id: 'adm-look',
      kind: 'credit',
      state: 'dead',
      session_id: sessionId,
      round_id: 'round-look',
      amount: 5,
      attempts: 11,
      last_wallet_code: 2,
      compensation: null,
      wallet_round_id: 'round-look',
      history: [2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2],
      note: 'retries exhausted',
      error: { code: 'WALLET_REJECTED', wallet_code: 2, message: 'retries exhausted', http_status: 503 },
    });
    // u64 ids keep every digit (lossless JSON on the way out)
    expect(res.text).toContain(`"player_id":${PLAYER}`);
    expect(res.text).toContain('"amount":5.00');
    expect(res.text).not.toContain('secret-wallet-token');
    expect(res.text).not.toMatch(/wallet_body|"body"/);
    expect(logs.some((l) => l.includes('"action":"lookup"') && l.includes(`"admin_user":"${ADMIN.user}"`) && l.includes('adm-look'))).toBe(true);
  });

  it('answers 404 TRANSACTION_NOT_FOUND for an unknown id and 400 for an id over 36 characters', async () => {
    const missing = await request(gateway.url).get('/admin/transactions/nope').set('Authorization', auth).expect(404);
    expect(missing.body.error).toEqual({ code: 'TRANSACTION_NOT_FOUND', wallet_code: null, message: expect.any(String) });
    const long = await request(gateway.url).get(`/admin/transactions/${'x'.repeat(37)}`).set('Authorization', auth).expect(400);
    expect(long.body.error.code).toBe('VALIDATION_FAILED');
  });

  it('lists dead records page by page with the total', async () => {
    await deadCredit('adm-list-1', 'round-l1');
    await deadCredit('adm-list-2', 'round-l2');
    const all = await request(gateway.url).get('/admin/transactions?state=dead&limit=100').set('Authorization', auth).expect(200);
    const total = all.body.total as number;
    expect(total).toBeGreaterThanOrEqual(2);
    const ids = (all.body.transactions as { transaction_id: string; state: string }[]).map((t) => t.transaction_id);
    expect(ids).toEqual(expect.arrayContaining(['adm-list-1', 'adm-list-2']));

    const page = await request(gateway.url).get('/admin/transactions?state=dead&offset=1&limit=1').set('Authorization', auth).expect(200);
    expect(page.body).toMatchObject({ total, offset: 1, limit: 1 });
    expect(page.body.transactions).toHaveLength(1);
    expect(page.body.transactions[0].transaction_id).toBe(ids[1]);
  });

  it('refuses a list without state=dead or with a bad page, naming the field', async () => {
    const res = await request(gateway.url).get('/admin/transactions?state=pending&limit=0').set('Authorization', auth).expect(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    expect((res.body.error.fields as { field: string }[]).map((f) => f.field).sort()).toEqual(['limit', 'state']);
  });

  it('redrives a dead record into the retry queue once, then answers 409 NOT_DEAD', async () => {
    await deadCredit('adm-redrive', 'round-rd');
    const res = await request(gateway.url).post('/admin/transactions/adm-redrive/redrive').set('Authorization', auth).expect(202);
    expect(res.body).toMatchObject({ redriven: 'adm-redrive', transaction: { transaction_id: 'adm-redrive', state: 'pending', history: [] } });
    expect(await transactions.get('adm-redrive')).toMatchObject({ state: 'pending', error: null });
    expect((await transactions.listDead(0, 100)).ids).not.toContain('adm-redrive');

    const queueRedis = createRedis(redisUrl(), { forBullmq: true });
    const retry = new Queue(QUEUE_NAMES.retry, { connection: queueRedis, prefix });
    try {
      expect(await retry.getJobState(retryJobId('adm-redrive'))).toMatch(/^(waiting|prioritized)$/);
    } finally {
      await retry.close();
      await closeRedis(queueRedis);
    }

    const again = await request(gateway.url).post('/admin/transactions/adm-redrive/redrive').set('Authorization', auth).expect(409);
    expect(again.body).toMatchObject({ state: 'failed', error: { code: 'NOT_DEAD', wallet_code: null } });
    await request(gateway.url).post('/admin/transactions/nope/redrive').set('Authorization', auth).expect(404);
    expect(logs.some((l) => l.includes('"action":"redrive"') && l.includes(`"admin_user":"${ADMIN.user}"`) && l.includes('"result":"redriven"'))).toBe(true);
    // In the console's audit trail too, as the console's own redrive is, the endpoint for a note.
    expect(await auditOf('adm-redrive')).toEqual([
      ['redrive', 'not_dead', 'pending', 'pending', ADMIN.user, 'via POST /admin/transactions/{id}/redrive'],
      ['redrive', 'redriven', 'dead', 'pending', ADMIN.user, 'via POST /admin/transactions/{id}/redrive'],
    ]);
  });

  it('redrives every dead record a filter matches, audited, and refuses the bulk action without credentials or from another origin', async () => {
    const since = new Date().toISOString();
    await deadCredit('adm-bulk-1', 'round-b1');
    await deadCredit('adm-bulk-2', 'round-b2');
    await request(gateway.url).post('/admin/transactions/redrive').send({ kind: 'credit', from: since }).expect(401);
    await request(gateway.url).post('/admin/transactions/redrive').set('Authorization', auth).set('Origin', 'https://evil.example').send({ from: since }).expect(403);
    await request(gateway.url).post('/admin/transactions/redrive').set('Authorization', auth).send({ state: 'pending' }).expect(400);
    expect(await transactions.get('adm-bulk-1')).toMatchObject({ state: 'dead' });

    const debitsOnly = await request(gateway.url).post('/admin/transactions/redrive').set('Authorization', auth).send({ kind: 'debit', from: since }).expect(202);
    expect(debitsOnly.body).toMatchObject({ redriven: [], skipped: [] });
    const res = await request(gateway.url).post('/admin/transactions/redrive').set('Authorization', auth).send({ kind: 'credit', from: since }).expect(202);
    expect([...res.body.redriven].sort()).toEqual(['adm-bulk-1', 'adm-bulk-2']);
    expect(await transactions.get('adm-bulk-1')).toMatchObject({ state: 'pending' });
    expect(await transactions.get('adm-bulk-2')).toMatchObject({ state: 'pending' });
    expect(logs.some((l) => l.includes('"action":"redrive-bulk"') && l.includes('adm-bulk-1') && l.includes(`"admin_user":"${ADMIN.user}"`))).toBe(true);
    for (const id of ['adm-bulk-1', 'adm-bulk-2']) {
      expect(await auditOf(id)).toEqual([['redrive', 'redriven', 'dead', 'pending', ADMIN.user, `via bulk redrive (POST /admin/transactions/redrive: kind credit, from ${new Date(since).toISOString()}, limit 1000)`]]);
    }
  });

  it('never logs the admin password or the Authorization header', () => {
    const text = logs.join('');
    expect(text).not.toContain(ADMIN.password);
    expect(text).not.toContain(auth.slice('Basic '.length));
  });
});
