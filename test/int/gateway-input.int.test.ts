import { brotliCompressSync, gzipSync } from 'node:zlib';
import request from 'supertest';
import { API_KEY, engine, launch, startHarness, txKeyCount, type Harness } from '../support/gateway-harness';
import { rawRequest, sendAndWaitForClose } from '../support/raw-http';

/**
 * Malformed engine requests: each gets 400/401/408/413, causes no wallet call and writes no
 * transaction record.
 */
const BODY_TIMEOUT_MS = 500;
let h: Harness;
let eur: string;
let jpy: string;

beforeAll(async () => {
  h = await startHarness({ label: 'gw-input', bodyTimeoutMs: BODY_TIMEOUT_MS });
  eur = (await launch(h, { currency: 'EUR' })).sessionId;
  jpy = (await launch(h, { currency: 'JPY' })).sessionId;
  h.sim.clearCalls();
});

afterAll(async () => {
  expect(await txKeyCount(h)).toBe(0);
  await h.close();
});

const bet = (fields: string) => ({ path: () => `/sessions/${eur}/bet`, raw: fields });
const ok = '"round_id":"r1","transaction_id":"t1"';

interface Case {
  path: () => string;
  raw: string;
  status?: number;
  fields?: string[];
  auth?: string | null;
  method?: 'get';
}

const cases: [string, Case][] = [
  ['an empty bet body', { ...bet(''), fields: ['round_id', 'transaction_id', 'amount'] }],
  ['broken JSON', { ...bet('{"round_id":'), fields: ['body'] }],
  ['a JSON array', { ...bet('[]'), fields: ['body'] }],
  ['a JSON string', { ...bet('"bet"'), fields: ['body'] }],
  ['NaN as amount', { ...bet(`{${ok},"amount":NaN}`), fields: ['body'] }],
  ['the amount as a string', { ...bet(`{${ok},"amount":"10"}`), fields: ['amount'] }],
  ['a negative amount', { ...bet(`{${ok},"amount":-1}`), fields: ['amount'] }],
  ['a zero bet', { ...bet(`{${ok},"amount":0}`), fields: ['amount'] }],
  ['an amount in exponent notation', { ...bet(`{${ok},"amount":1e2}`), fields: ['amount'] }],
  ['three fraction digits in EUR', { ...bet(`{${ok},"amount":1.005}`), fields: ['amount'] }],
  ['a fraction in JPY', { path: () => `/sessions/${jpy}/bet`, raw: `{${ok},"amount":1.5}`, fields: ['amount'] }],
  ['an empty round_id', { ...bet('{"round_id":"","transaction_id":"t1","amount":1}'), fields: ['round_id'] }],
  ['a 37-character transaction_id', { ...bet(`{"round_id":"r","transaction_id":"${'x'.repeat(37)}","amount":1}`), fields: ['transaction_id'] }],
  ['a numeric transaction_id', { ...bet('{"round_id":"r","transaction_id":123,"amount":1}'), fields: ['transaction_id'] }],
  ['round_closed as a string', { ...bet(`{${ok},"amount":1,"round_closed":"true"}`), fields: ['round_closed'] }],
  ['an unknown field', { ...bet(`{${ok},"amount":1,"player_id":5}`), fields: ['player_id'] }],
  ['several bad fields at once', { ...bet('{"round_id":7,"amount":-2,"x":1,"y":2}'), fields: ['round_id', 'transaction_id', 'amount', 'x', 'y'] }],
  ['a win without bet_transaction_id', { path: () => `/sessions/${eur}/win`, raw: `{${ok},"amount":1}`, fields: ['bet_transaction_id'] }],
  ['a refund with a null bet_transaction_id', { path: () => `/sessions/${eur}/refund`, raw: `{${ok},"bet_transaction_id":null,"amount":1}`, fields: ['bet_transaction_id'] }],
  ['a win with three fraction digits', { path: () => `/sessions/${eur}/win`, raw: `{${ok},"bet_transaction_id":"b","amount":0.001}`, fields: ['amount'] }],
  ['a balance body with a field', { path: () => `/sessions/${eur}/balance`, raw: '{"currency":"EUR"}', fields: ['currency'] }],
  ['an end body with a field', { path: () => `/sessions/${eur}/end`, raw: '{"force":true}', fields: ['force'] }],
  ['a verify body with a field', { path: () => '/transactions/t1/verify', raw: '{"action":"debit"}', fields: ['action'] }],
  ['a 37-character transaction id in the path', { path: () => `/transactions/${'y'.repeat(37)}`, raw: '', method: 'get', fields: ['transaction_id'] }],
  ['no Authorization', { ...bet(`{${ok},"amount":1}`), auth: null, status: 401 }],
  ['a wrong Bearer key', { ...bet(`{${ok},"amount":1}`), auth: 'Bearer nope', status: 401 }],
  ['the key without the Bearer scheme', { ...bet(`{${ok},"amount":1}`), auth: API_KEY, status: 401 }],
  ['a body over 16 KiB', { ...bet(`{${ok},"amount":1,"pad":"${'p'.repeat(16 * 1024)}"}`), status: 413 }],
  ['a session id that is not valid URL encoding', { path: () => '/sessions/%E0%A4%A/bet', raw: `{${ok},"amount":1}`, fields: ['session_id'] }],
  ['a transaction id that is not valid URL encoding', { path: () => '/transactions/%ZZ', raw: '', method: 'get', fields: ['transaction_id'] }],
];

describe('malformed engine requests', () => {
  it.each(cases)('%s', async (_label, c) => {
    const before = await txKeyCount(h);
    let req;
    if (c.method === 'get') req = request(h.url).get(`/engine/v1${c.path()}`).set('Authorization', `Bearer ${API_KEY}`);
    else if (c.auth === undefined) req = engine(h, c.path(), c.raw);
    else {
      req = request(h.url).post(`/engine/v1${c.path()}`).set('Content-Type', 'application/json');
      if (c.auth !== null) req = req.set('Authorization', c.auth);
      req = req.send(c.raw);
    }
    const res = await req;
    const status = c.status ?? 400;
    expect(res.status).toBe(status);
    expect(res.body.state).toBe('failed');
    expect(res.body.request_id).toBe(res.headers['x-request-id']);
    expect(res.body.error.code).toBe({ 400: 'VALIDATION_FAILED', 401: 'UNAUTHORIZED', 413: 'PAYLOAD_TOO_LARGE' }[status]);
    if (c.fields) expect((res.body.error.fields as { field: string }[]).map((f) => f.field).sort()).toEqual([...c.fields].sort());
    expect(h.sim.walletCalls()).toHaveLength(0);
    expect(await txKeyCount(h)).toBe(before);
  });

  it('echoes a sane X-Request-Id and replaces an unsafe one', async () => {
    const kept = await engine(h, `/sessions/${eur}/bet`, '{}').set('X-Request-Id', 'engine-req-42');
    expect(kept.headers['x-request-id']).toBe('engine-req-42');
    expect(kept.body.request_id).toBe('engine-req-42');
    const replaced = await engine(h, `/sessions/${eur}/bet`, '{}').set('X-Request-Id', 'bad id with spaces');
    expect(replaced.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it.each([
    ['an unknown action', 'post', (): string => `/sessions/${eur}/cashout`],
    ['a bet by GET', 'get', (): string => `/sessions/${eur}/bet`],
    ['a lookup by POST', 'post', (): string => '/transactions/t1'],
    ['an empty session id', 'post', (): string => '/sessions//bet'],
    ['a path one segment too long', 'post', (): string => `/sessions/${eur}/bet/now`],
    ['no route under the prefix', 'get', (): string => '/'],
  ] as const)('answers %s with 404 in the same shape, and sends nothing', async (_label, method, path) => {
    const res = await request(h.url)[method](`/engine/v1${path()}`).set('Authorization', `Bearer ${API_KEY}`).send(`{${ok},"amount":1}`);
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ state: 'failed', error: { code: 'NOT_FOUND' } });
    expect(res.body.request_id).toBe(res.headers['x-request-id']);
    expect(h.sim.walletCalls()).toHaveLength(0);
  });

  it('asks for the key before it says whether a route exists', async () => {
    const res = await request(h.url).post(`/engine/v1/sessions/${eur}/cashout`).send('{}');
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer');
    expect(res.body.error.code).toBe('UNAUTHORIZED');
  });

  it('keeps the connection usable after refusing a body it did not read', async () => {
    const agent = request.agent(h.url);
    const refused = await agent.post(`/engine/v1/sessions/${eur}/cashout`).set('Authorization', `Bearer ${API_KEY}`).send(`{"pad":"${'p'.repeat(8 * 1024)}"}`);
    expect(refused.status).toBe(404);
    const balance = await agent.post(`/engine/v1/sessions/${eur}/balance`).set('Authorization', `Bearer ${API_KEY}`).send('{}');
    expect(balance.status).toBe(200);
    h.sim.clearCalls();
  });
});

describe('bodies that are not what they say (never a 5xx)', () => {
  const headers = (extra: Record<string, string> = {}) => ({ authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', ...extra });
  const betBytes = (id: Buffer) => Buffer.concat([Buffer.from('{"round_id":"r1","transaction_id":"'), id, Buffer.from('","amount":1}')]);
  const errorLines = () => h.logs.filter((l) => l.includes('"level":50')).length;

  it.each([
    ['a corrupt gzip body', 'gzip', Buffer.from('\x1f\x8b\x08\x00garbage', 'latin1')],
    ['a gzip body cut short', 'gzip', gzipSync('{"round_id":"r1","transaction_id":"t1","amount":1}').subarray(0, 20)],
    ['a corrupt brotli body', 'br', Buffer.from('\xff\xff\xff\xffnot brotli at all', 'latin1')],
    ['an unknown Content-Encoding', 'x-unknown', Buffer.from('{}')],
    ['invalid UTF-8 inside a gzip body', 'gzip', gzipSync(betBytes(Buffer.from([0x6a, 0xff, 0xfe])))],
  ])('%s is 400 naming the body, logged as no failure', async (_label, encoding, bytes) => {
    const errorsBefore = errorLines();
    const res = await rawRequest(h.url, 'POST', `/engine/v1/sessions/${eur}/bet`, headers({ 'content-encoding': encoding }), bytes);
    expect(res.status).toBe(400);
    const answer = JSON.parse(res.text);
    expect(answer.error).toMatchObject({ code: 'VALIDATION_FAILED', fields: [{ field: 'body', message: expect.any(String) }] });
    expect(h.sim.walletCalls()).toHaveLength(0);
    expect(errorLines()).toBe(errorsBefore);
    // gzip of a good body still works afterwards
    expect((await rawRequest(h.url, 'POST', `/engine/v1/sessions/${eur}/balance`, headers({ 'content-encoding': 'br' }), brotliCompressSync('{}'))).status).toBe(200);
    h.sim.clearCalls();
  });

  it('refuses invalid UTF-8, so two different byte strings never become one id', async () => {
    for (const id of [Buffer.from([0x6a, 0xff, 0xfe]), Buffer.from([0x6a, 0xfe, 0xff]), Buffer.from([0x73, 0x75, 0xed, 0xa0, 0x80])]) {
      const res = await rawRequest(h.url, 'POST', `/engine/v1/sessions/${eur}/bet`, headers(), betBytes(id));
      expect(res.status).toBe(400);
      expect(JSON.parse(res.text).error.fields).toEqual([{ field: 'body', message: 'is not valid UTF-8' }]);
    }
    expect(h.sim.walletCalls()).toHaveLength(0);
  });

  it.each([
    ['a lone high surrogate', '{"round_id":"r1","transaction_id":"su\\ud800","amount":1}', 'transaction_id'],
    ['a lone low surrogate', '{"round_id":"r1","transaction_id":"su\\udfff","amount":1}', 'transaction_id'],
    ['a lone surrogate in round_id', '{"round_id":"\\udc00r","transaction_id":"t1","amount":1}', 'round_id'],
  ])('refuses %s in an id with 400 naming it', async (_label, raw, field) => {
    const res = await engine(h, `/sessions/${eur}/bet`, raw);
    expect(res.status).toBe(400);
    expect(res.body.error.fields).toEqual([{ field, message: expect.stringContaining('lone surrogate') }]);
    expect(h.sim.walletCalls()).toHaveLength(0);
  });

  it('answers 408 and closes the connection when the body has not fully arrived by the deadline', async () => {
    const head = [
      `POST /engine/v1/sessions/${eur}/bet HTTP/1.1`,
      'Host: gateway.test',
      `Authorization: Bearer ${API_KEY}`,
      'Content-Type: application/json',
      'Content-Length: 100',
    ].join('\r\n');
    const received = await sendAndWaitForClose(h.url, head, '{"');
    expect(received).toMatch(/^HTTP\/1\.1 408 /);
    expect(received).toMatch(/\r\nconnection: close\r\n/i);
    const answer = JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4));
    expect(answer).toMatchObject({ state: 'failed', error: { code: 'REQUEST_TIMEOUT', wallet_code: null } });
    expect(h.sim.walletCalls()).toHaveLength(0);
  });
});
