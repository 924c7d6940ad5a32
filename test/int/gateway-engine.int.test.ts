import { request as httpRequest } from 'node:http';
import { gzipSync } from 'node:zlib';
import request from 'supertest';
import { compensationTransactionId } from '../../src/duties/compensation-id';
import { retryJobId } from '../../src/duties/queues';
import { waitFor } from '../../src/lib/wait-for';
import { Code } from '../../src/wallet/codes';
import { API_KEY, engine, launch, startHarness, uniqueId, type Harness } from '../support/gateway-harness';

const U64_MAX = '18446744073709551615';
let h: Harness;
/** Every engine answer body seen, to check no token ever went back to the engine. */
const answers: string[] = [];
const tokens: string[] = [];

beforeAll(async () => {
  h = await startHarness({ label: 'gw-engine' });
});

afterAll(async () => {
  const all = answers.join('\n');
  const logs = h.logs.join('\n');
  for (const token of tokens) {
    expect(all).not.toContain(token);
    expect(logs).not.toContain(token);
  }
  await h.close();
});

beforeEach(() => {
  h.sim.faults.clear();
  h.sim.clearCalls();
});

async function session(o: Parameters<typeof launch>[1] = {}) {
  const s = await launch(h, o);
  tokens.push(s.token);
  return s;
}

async function post(path: string, b: Record<string, unknown> | string = {}) {
  const res = await engine(h, path, b);
  answers.push(res.text);
  return res;
}

const walletCalls = (op: string) => h.sim.calls().filter((c) => c.operation === op);

describe('happy paths', () => {
  it('balance, bet, win, refund, end, transaction lookup and verify', async () => {
    const { sessionId, playerId } = await session();

    const balance = await post(`/sessions/${sessionId}/balance`);
    expect(balance.status).toBe(200);
    expect(balance.body).toEqual({ state: 'succeeded', transaction_id: null, balance: 1000, currency: 'EUR', request_id: balance.headers['x-request-id'] });

    const bet = await post(`/sessions/${sessionId}/bet`, { round_id: 'r1', transaction_id: uniqueId('bet'), amount: '10.10' });
    expect(bet.status).toBe(200);
    expect(bet.text).toContain('"balance":989.90');
    expect(bet.body.state).toBe('succeeded');
    expect(walletCalls('debit')[0]?.rawBody).toContain('"amount":10.10');

    const win = await post(`/sessions/${sessionId}/win`, { round_id: 'r1', transaction_id: uniqueId('win'), bet_transaction_id: bet.body.transaction_id, amount: '20' });
    expect(win.status).toBe(200);
    expect(win.text).toContain('"balance":1009.90');
    const credit = walletCalls('credit')[0];
    expect(credit?.rawBody).toContain(`"reference_transaction_id":"${bet.body.transaction_id}"`);
    expect(credit?.rawBody).toContain('"round_closed":true');

    const bet2 = await post(`/sessions/${sessionId}/bet`, { round_id: 'r2', transaction_id: uniqueId('bet'), amount: '5' });
    const refund = await post(`/sessions/${sessionId}/refund`, { round_id: 'r2', transaction_id: uniqueId('ref'), bet_transaction_id: bet2.body.transaction_id, amount: '5.00' });
    expect(refund.status).toBe(200);
    expect(refund.body.balance).toBe(1009.9);
    expect(walletCalls('rollback')[0]?.rawBody).toContain(`"reference_transaction_id":"${bet2.body.transaction_id}"`);

    const view = await request(h.url).get(`/engine/v1/transactions/${bet.body.transaction_id}`).set('Authorization', `Bearer ${API_KEY}`);
    answers.push(view.text);
    expect(view.status).toBe(200);
    expect(view.body).toEqual({
      transaction_id: bet.body.transaction_id,
      kind: 'debit',
      state: 'succeeded',
      session_id: sessionId,
      round_id: 'r1',
      amount: 10.1,
      attempts: 1,
      last_wallet_code: 1,
      balance: 989.9,
      compensation: null,
      request_id: view.headers['x-request-id'],
    });
    expect(view.text).toContain('"amount":10.10');

    const verify = await post(`/transactions/${win.body.transaction_id}/verify`);
    expect(verify.status).toBe(200);
    expect(verify.body).toMatchObject({ transaction_id: win.body.transaction_id, kind: 'credit', state: 'succeeded', wallet: { outcome: 'ok', wallet_code: 1 } });
    const status = walletCalls('status')[0];
    expect(status?.body).toMatchObject({ action: 'credit', transaction_id: win.body.transaction_id, round_id: 'r1', amount: '20' });

    const end = await post(`/sessions/${sessionId}/end`);
    expect(end.status).toBe(200);
    expect(end.body).toMatchObject({ state: 'succeeded', balance: 1009.9, currency: 'EUR' });
    expect(walletCalls('terminate')).toHaveLength(1);
    expect((await h.sessions.get(sessionId))?.state).toBe('ended');
    expect(h.sim.ledger.balanceOf(playerId)).toBe('1009.90');

    const after = await post(`/sessions/${sessionId}/bet`, { round_id: 'r3', transaction_id: uniqueId('bet'), amount: '1' });
    expect(after.status).toBe(409);
    expect(after.body.error.code).toBe('SESSION_ENDED');
    const again = await post(`/sessions/${sessionId}/end`);
    expect(again.status).toBe(200);
    expect(walletCalls('terminate')).toHaveLength(1);
  });

  it('keeps ids of 2^64−1 and amounts exact end to end', async () => {
    const { sessionId } = await session({ playerId: U64_MAX, siteId: U64_MAX, currency: 'BHD' });
    const bet = await post(`/sessions/${sessionId}/bet`, { round_id: 'big', transaction_id: uniqueId('bet'), amount: '0.125' });
    expect(bet.status).toBe(200);
    const raw = walletCalls('debit')[0]?.rawBody ?? '';
    expect(raw).toContain(`"player_id":${U64_MAX}`);
    expect(raw).toContain(`"site_id":${U64_MAX}`);
    expect(raw).toContain(`"provider_id":${U64_MAX}`);
    expect(raw).toContain('"amount":0.125');
    expect(bet.text).toContain('"balance":999.875');
  });

  it('counts engine requests and wallet calls in the metrics', async () => {
    const { sessionId } = await session();
    await post(`/sessions/${sessionId}/balance`);
    const text = await h.metrics.registry.metrics();
    expect(text).toMatch(/engine_requests_total\{route="\/engine\/v1\/sessions\/:sessionId\/balance",status="200"\} [1-9]/);
    expect(text).toMatch(/wallet_calls_total\{operation="balance",outcome="ok",code="1",wallet="default"\} [1-9]/);
  });

  it('writes one request line and one wallet-call line per bet, both with the request id', async () => {
    const { sessionId } = await session();
    const requestId = uniqueId('bet-log');
    const bet = await engine(h, `/sessions/${sessionId}/bet`, { round_id: uniqueId('r'), transaction_id: uniqueId('t'), amount: 1 }).set('X-Request-Id', requestId);
    expect(bet.status).toBe(200);
    const lines = h.logs.flatMap((chunk) => chunk.split('\n')).filter((l) => l.includes(`"request_id":"${requestId}"`));
    const parsed = lines.map((l) => JSON.parse(l) as { msg: string; operation?: string; res?: { status: number } });
    expect(parsed.filter((l) => l.msg === 'wallet call').map((l) => l.operation)).toEqual(['debit']);
    expect(parsed.filter((l) => l.msg === 'request completed').map((l) => l.res?.status)).toEqual([200]);
  });
});

describe('a Redis command that fails on the bet path', () => {
  it('is a 500 with the error logged by the command it failed in, not by its arguments (they hold the wallet body, token and all)', async () => {
    const { sessionId, token } = await session();
    const txId = uniqueId('wrongtype');
    // The claim's first write meets a key of the wrong type: Redis refuses the script with WRONGTYPE.
    await h.redis.set(h.keys.transaction(txId), 'not-a-hash');
    const requestId = uniqueId('redis-fail');
    const res = await engine(h, `/sessions/${sessionId}/bet`, { round_id: uniqueId('r'), transaction_id: txId, amount: '1.00' }).set('X-Request-Id', requestId);
    expect(res.status).toBe(500);
    expect(walletCalls('debit').filter((c) => c.transactionId === txId)).toEqual([]);
    const line = h.logs.flatMap((chunk) => chunk.split('\n')).find((l) => l.includes(`"request_id":"${requestId}"`) && l.includes('"msg":"request failed"'));
    expect(line).toBeDefined();
    const logged = JSON.parse(line as string) as { err: { message: string; command?: unknown } };
    expect(logged.err.message).toMatch(/WRONGTYPE/);
    expect(logged.err.command).toEqual({ name: expect.stringMatching(/^eval(sha)?$/) });
    expect(line).not.toContain(token);
    expect(line).not.toContain(txId);
  });
});

describe('contract error codes', () => {
  it('SESSION_NOT_FOUND and TRANSACTION_NOT_FOUND', async () => {
    const bet = await post('/sessions/AAAAAAAAAAAAAAAAAAAAAA/bet', { round_id: 'r', transaction_id: uniqueId('bet'), amount: '1' });
    expect(bet.status).toBe(404);
    expect(bet.body).toEqual({ state: 'failed', error: { code: 'SESSION_NOT_FOUND', wallet_code: null, message: expect.any(String) }, request_id: expect.any(String) });
    const balance = await post('/sessions/nope/balance');
    expect(balance.status).toBe(404);
    const tx = await request(h.url).get('/engine/v1/transactions/unknown-tx').set('Authorization', `Bearer ${API_KEY}`);
    expect(tx.status).toBe(404);
    expect(tx.body.error.code).toBe('TRANSACTION_NOT_FOUND');
    const verify = await post('/transactions/unknown-tx/verify');
    expect(verify.status).toBe(404);
    expect(h.sim.walletCalls()).toHaveLength(0);
  });

  it('UNAUTHORIZED without or with a wrong Bearer key', async () => {
    for (const header of [undefined, 'Bearer wrong', `Basic ${API_KEY}`, `Bearer ${API_KEY}x`]) {
      const req = request(h.url).post('/engine/v1/sessions/x/balance').send('{}');
      const res = await (header === undefined ? req : req.set('Authorization', header));
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toBe('Bearer');
      expect(res.body.error.code).toBe('UNAUTHORIZED');
    }
  });

  it('during a key rotation (ENGINE_API_KEY "old,new") both keys are accepted and any other is UNAUTHORIZED', async () => {
    const rotating = await startHarness({ label: 'gw-engine-rotation', env: { ENGINE_API_KEY: `${API_KEY}-old,${API_KEY}-new` } });
    try {
      const { sessionId, token } = await launch(rotating);
      tokens.push(token);
      const balance = (key: string) => request(rotating.url).post(`/engine/v1/sessions/${sessionId}/balance`).set('Authorization', `Bearer ${key}`).send('{}');
      expect((await balance(`${API_KEY}-old`)).status).toBe(200);
      expect((await balance(`${API_KEY}-new`)).status).toBe(200);
      for (const key of [API_KEY, `${API_KEY}-old,${API_KEY}-new`, `${API_KEY}-newer`]) expect((await balance(key)).status).toBe(401);
      expect(rotating.sim.walletCalls().filter((c) => c.operation === 'balance')).toHaveLength(2);
    } finally {
      await rotating.close();
    }
  });

  it('PAYLOAD_TOO_LARGE over 16 KiB', async () => {
    const { sessionId } = await session();
    const res = await post(`/sessions/${sessionId}/bet`, JSON.stringify({ round_id: 'x'.repeat(17 * 1024) }));
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('PAYLOAD_TOO_LARGE for a chunked body (no Content-Length) over 16 KiB, and the connection still answers', async () => {
    const { sessionId } = await session();
    const url = new URL(`/engine/v1/sessions/${sessionId}/bet`, h.url);
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(url, { method: 'POST', headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      for (let i = 0; i < 20; i += 1) req.write('x'.repeat(1024));
      req.end();
    });
    expect(status).toBe(413);
  });

  it('a gzip-encoded body is inflated and read like a plain one', async () => {
    const { sessionId } = await session();
    const url = new URL(`/engine/v1/sessions/${sessionId}/balance`, h.url);
    const post = (text: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const headers = { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', 'content-encoding': 'gzip' };
        const req = httpRequest(url, { method: 'POST', headers }, (res) => {
          let body = '';
          res.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        });
        req.on('error', reject);
        req.end(gzipSync(text));
      });
    expect((await post('{}')).status).toBe(200);
    const bad = await post('{"x":1}');
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body).error.fields).toEqual([{ field: 'x', message: 'unknown field' }]);
    const broken = await post('{"x":');
    expect(broken.status).toBe(400);
    expect(JSON.parse(broken.body).error.fields).toEqual([{ field: 'body', message: 'is not valid JSON' }]);
    expect((await post('{}')).status).toBe(200);
  });

  it('ROUND_HAS_BET, ROUND_CLOSED (which wins) and BET_NOT_FOUND, with no wallet call', async () => {
    const { sessionId } = await session();
    const bet = await post(`/sessions/${sessionId}/bet`, { round_id: 'r', transaction_id: uniqueId('bet'), amount: '1' });
    expect(bet.status).toBe(200);
    h.sim.clearCalls();

    const second = await post(`/sessions/${sessionId}/bet`, { round_id: 'r', transaction_id: uniqueId('bet'), amount: '1' });
    expect(second.status).toBe(409);
    expect(second.body.error.code).toBe('ROUND_HAS_BET');

    const strayWin = await post(`/sessions/${sessionId}/win`, { round_id: 'r', transaction_id: uniqueId('win'), bet_transaction_id: 'no-such-bet', amount: '1' });
    expect(strayWin.status).toBe(422);
    expect(strayWin.body.error.code).toBe('BET_NOT_FOUND');
    const otherRound = await post(`/sessions/${sessionId}/win`, { round_id: 'other', transaction_id: uniqueId('win'), bet_transaction_id: bet.body.transaction_id, amount: '1' });
    expect(otherRound.body.error.code).toBe('BET_NOT_FOUND');
    expect(h.sim.walletCalls()).toHaveLength(0);

    const win = await post(`/sessions/${sessionId}/win`, { round_id: 'r', transaction_id: uniqueId('win'), bet_transaction_id: bet.body.transaction_id, amount: '0' });
    expect(win.status).toBe(200);
    h.sim.clearCalls();
    const late = await post(`/sessions/${sessionId}/bet`, { round_id: 'r', transaction_id: uniqueId('bet'), amount: '1' });
    expect(late.status).toBe(409);
    expect(late.body.error.code).toBe('ROUND_CLOSED');
    const lateWin = await post(`/sessions/${sessionId}/win`, { round_id: 'r', transaction_id: uniqueId('win'), bet_transaction_id: bet.body.transaction_id, amount: '1' });
    expect(lateWin.body.error.code).toBe('ROUND_CLOSED');
    expect(h.sim.walletCalls()).toHaveLength(0);
  });

  it('a win in another session of the same player finds the bet', async () => {
    const first = await session();
    const bet = await post(`/sessions/${first.sessionId}/bet`, { round_id: 'rr', transaction_id: uniqueId('bet'), amount: '2' });
    const second = await session({ playerId: first.playerId });
    const win = await post(`/sessions/${second.sessionId}/win`, { round_id: 'rr', transaction_id: uniqueId('win'), bet_transaction_id: bet.body.transaction_id, amount: '3' });
    expect(win.status).toBe(200);
  });

  it('refund rules: amount must match, one refund per bet, a refund of a bet the round does not hold is BET_NOT_FOUND', async () => {
    const { sessionId } = await session();
    const bet = await post(`/sessions/${sessionId}/bet`, { round_id: 'rf', transaction_id: uniqueId('bet'), amount: '5' });
    const wrong = await post(`/sessions/${sessionId}/refund`, { round_id: 'rf', transaction_id: uniqueId('ref'), bet_transaction_id: bet.body.transaction_id, amount: '4.99' });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toMatchObject({ code: 'VALIDATION_FAILED', fields: [{ field: 'amount', message: expect.any(String) }] });

    const refundArgs = { round_id: 'rf', bet_transaction_id: bet.body.transaction_id, amount: '5.0', round_closed: false };
    const ok = await post(`/sessions/${sessionId}/refund`, { ...refundArgs, transaction_id: uniqueId('ref') });
    expect(ok.status).toBe(200);
    const twice = await post(`/sessions/${sessionId}/refund`, { ...refundArgs, transaction_id: uniqueId('ref') });
    expect(twice.status).toBe(409);
    expect(twice.body.error.code).toBe('BET_ALREADY_REFUNDED');

    h.sim.clearCalls();
    const unseen = await post(`/sessions/${sessionId}/refund`, { round_id: 'ghost', transaction_id: uniqueId('ref'), bet_transaction_id: 'never-seen', amount: '1' });
    expect(unseen.status).toBe(422);
    expect(unseen.body.error.code).toBe('BET_NOT_FOUND');
    expect(walletCalls('rollback')).toHaveLength(0);
  });

  it('WALLET_REJECTED with the spec status, 422 outside the table; a refused bet gives its round back', async () => {
    const { sessionId } = await session();
    const broke = await post(`/sessions/${sessionId}/bet`, { round_id: 'wr', transaction_id: uniqueId('bet'), amount: '5000' });
    expect(broke.status).toBe(422);
    expect(broke.body.error).toMatchObject({ code: 'WALLET_REJECTED', wallet_code: Code.InsufficientFunds });

    h.sim.faults.failNext('debit', 1, Code.UserOffline);
    const offline = await post(`/sessions/${sessionId}/bet`, { round_id: 'wr', transaction_id: uniqueId('bet'), amount: '1' });
    expect(offline.status).toBe(403);
    expect(offline.body.error).toMatchObject({ code: 'WALLET_REJECTED', wallet_code: Code.UserOffline });

    const retried = await post(`/sessions/${sessionId}/bet`, { round_id: 'wr', transaction_id: uniqueId('bet'), amount: '1' });
    expect(retried.status).toBe(200);
  });

  it('SESSION_ENDED for a bet once end was asked', async () => {
    const { sessionId } = await session();
    await post(`/sessions/${sessionId}/end`);
    const bet = await post(`/sessions/${sessionId}/bet`, { round_id: 'x', transaction_id: uniqueId('bet'), amount: '1' });
    expect(bet.status).toBe(409);
    expect(bet.body.error.code).toBe('SESSION_ENDED');
    const balance = await post(`/sessions/${sessionId}/balance`);
    expect(balance.body.error.code).toBe('SESSION_ENDED');
  });

  it('SESSION_NOT_FOUND for a balance of a session gone from Redis while this process still holds its profile, with no wallet call', async () => {
    const { sessionId } = await session();
    expect((await post(`/sessions/${sessionId}/balance`)).status).toBe(200);
    await h.redis.del(h.keys.session(sessionId));
    h.sim.clearCalls();
    const gone = await post(`/sessions/${sessionId}/balance`);
    expect(gone.status).toBe(404);
    expect(gone.body.error.code).toBe('SESSION_NOT_FOUND');
    expect(walletCalls('balance')).toHaveLength(0);
  });
});

describe('multi_bet games', () => {
  it('sends each bet in its own wallet round and a win in its bet’s round', async () => {
    const { sessionId } = await session({ gameId: 'multi-game' });
    const b1 = uniqueId('bet');
    const b2 = uniqueId('bet');
    const first = await post(`/sessions/${sessionId}/bet`, { round_id: 'm', transaction_id: b1, amount: '1' });
    const second = await post(`/sessions/${sessionId}/bet`, { round_id: 'm', transaction_id: b2, amount: '2' });
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(walletCalls('debit').map((c) => c.body?.round_id)).toEqual([b1, b2]);

    const win = await post(`/sessions/${sessionId}/win`, { round_id: 'm', transaction_id: uniqueId('win'), bet_transaction_id: b2, amount: '4' });
    expect(win.status).toBe(200);
    expect(walletCalls('credit')[0]?.body).toMatchObject({ round_id: b2, reference_transaction_id: b2 });
    expect(win.body.balance).toBe(1001);

    const refund = await post(`/sessions/${sessionId}/refund`, { round_id: 'm', transaction_id: uniqueId('ref'), bet_transaction_id: b1, amount: '1' });
    expect(refund.status).toBe(200);
    expect(walletCalls('rollback')[0]?.body).toMatchObject({ round_id: b1, reference_transaction_id: b1 });

    // A win must still name a bet of the same engine round.
    const b3 = uniqueId('bet');
    await post(`/sessions/${sessionId}/bet`, { round_id: 'm', transaction_id: b3, amount: '1' });
    const stray = await post(`/sessions/${sessionId}/win`, { round_id: 'other', transaction_id: uniqueId('win'), bet_transaction_id: b3, amount: '1' });
    expect(stray.body.error.code).toBe('BET_NOT_FOUND');
  });
});

describe('wallet trouble handed to the background', () => {
  it('a win answered 12 inline answers 202 pending and its retry job is in Redis', async () => {
    const { sessionId } = await session();
    const bet = await post(`/sessions/${sessionId}/bet`, { round_id: 'p', transaction_id: uniqueId('bet'), amount: '1' });
    h.sim.faults.failNext('credit', 1, Code.InternalServiceError);
    const winId = uniqueId('win');
    const win = await post(`/sessions/${sessionId}/win`, { round_id: 'p', transaction_id: winId, bet_transaction_id: bet.body.transaction_id, amount: '2' });
    expect(win.status).toBe(202);
    expect(win.body).toEqual({ state: 'pending', transaction_id: winId, balance: 999, currency: 'EUR', request_id: expect.any(String) });
    const job = await h.duties.queues.shards[0]!.retry.getJob(retryJobId(winId));
    expect(job?.data).toEqual({ transactionId: winId });
    expect(await h.transactions.get(winId)).toMatchObject({ state: 'pending', attempts: 1, lastWalletCode: 12, history: [12] });

    // A repeat gets the stored pending answer, no wallet call.
    h.sim.clearCalls();
    const repeat = await post(`/sessions/${sessionId}/win`, { round_id: 'p', transaction_id: winId, bet_transaction_id: bet.body.transaction_id, amount: '2' });
    expect(repeat.status).toBe(202);
    expect(h.sim.walletCalls()).toHaveLength(0);

    // end waits for the pending credit: 202 and a terminate job, no terminate call yet.
    const end = await post(`/sessions/${sessionId}/end`);
    expect(end.status).toBe(202);
    expect(end.body.state).toBe('pending');
    expect(walletCalls('terminate')).toHaveLength(0);
    expect(await h.duties.queues.shards[0]!.terminate.getJobs(['waiting', 'delayed'])).toEqual(
      expect.arrayContaining([expect.objectContaining({ data: { tokenRef: (await h.sessions.get(sessionId))!.tokenRef } })]),
    );
    expect((await h.sessions.get(sessionId))?.state).toBe('ending');
  });

  it.each([
    ['code 12', () => h.sim.faults.failNext('debit', 1, Code.InternalServiceError), 500, 'WALLET_REJECTED', 12],
    ['an unparseable answer', () => h.sim.faults.nonJson('debit', 1), 503, 'WALLET_UNAVAILABLE', null],
  ])('a debit answered with %s is refused and its compensation queued', async (_label, arm, status, code, walletCode) => {
    const { sessionId } = await session();
    arm();
    const betId = uniqueId('bet');
    const bet = await post(`/sessions/${sessionId}/bet`, { round_id: 'c', transaction_id: betId, amount: '1' });
    expect(bet.status).toBe(status);
    expect(bet.body.error).toMatchObject({ code, wallet_code: walletCode });
    const record = await h.transactions.get(betId);
    expect(record).toMatchObject({ state: 'compensating', attempts: 1 });
    const compensationId = record?.compensationId as string;
    expect(await h.transactions.get(compensationId)).toMatchObject({ kind: 'rollback', state: 'pending', referenceTransactionId: betId });
    expect((await h.duties.queues.shards[0]!.retry.getJob(retryJobId(compensationId)))?.data).toEqual({ transactionId: compensationId });

    const view = await request(h.url).get(`/engine/v1/transactions/${betId}`).set('Authorization', `Bearer ${API_KEY}`);
    expect(view.body).toMatchObject({ state: 'compensating', compensation: { transaction_id: compensationId, state: 'pending' } });

    // the refusal is the stored answer
    h.sim.clearCalls();
    const repeat = await post(`/sessions/${sessionId}/bet`, { round_id: 'c', transaction_id: betId, amount: '1' });
    expect(repeat.status).toBe(status);
    expect(h.sim.walletCalls()).toHaveLength(0);
  });

  it('a refund a bet\'s compensation was linked to, then refused for good, hands over to the bet\'s own compensation; the bet holds its token meanwhile', async () => {
    const { sessionId } = await session();
    const betId = uniqueId('bet');
    const refundId = uniqueId('ref');
    // The bet is applied after 0.5 s and its connection breaks: outcome unknown. The engine's refund
    // of it, claimed meanwhile, is answered after 1.5 s (inside its 2 s deadline): refused for good.
    h.sim.faults.latency('debit', 500);
    h.sim.faults.applyThenDrop('debit', 1, { mode: 'reset', transactionId: betId });
    h.sim.faults.latency('rollback', 1500);
    h.sim.faults.failNext('rollback', 1, Code.Validation, { transactionId: refundId });
    const bet = post(`/sessions/${sessionId}/bet`, { round_id: 'l', transaction_id: betId, amount: '3' });
    await waitFor('the bet claimed', async () => (await h.transactions.get(betId)) !== undefined);
    const refund = post(`/sessions/${sessionId}/refund`, { round_id: 'l', transaction_id: refundId, bet_transaction_id: betId, amount: '3' });
    await waitFor('the refund claimed', async () => (await h.transactions.get(refundId)) !== undefined);
    expect((await bet).status).toBe(503);
    expect(await h.transactions.get(betId)).toMatchObject({ state: 'compensating', compensationId: refundId });
    expect((await refund).body.error).toMatchObject({ code: 'WALLET_REJECTED', wallet_code: Code.Validation });
    h.sim.faults.clear();

    // The bet's own compensation is pending with its job, holding the token the rollback needs.
    const own = compensationTransactionId(betId);
    expect(await h.transactions.get(betId)).toMatchObject({ state: 'compensating', compensationId: own });
    expect(await h.transactions.get(own)).toMatchObject({ kind: 'rollback', state: 'pending', referenceTransactionId: betId });
    expect((await h.duties.queues.shards[0]!.retry.getJob(retryJobId(own)))?.data).toEqual({ transactionId: own });
    const end = await post(`/sessions/${sessionId}/end`);
    expect({ status: end.status, state: end.body.state }).toEqual({ status: 202, state: 'pending' });
    expect(walletCalls('terminate')).toHaveLength(0);
  });
});
