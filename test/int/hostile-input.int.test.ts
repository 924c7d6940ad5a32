import { keysFor } from '../../src/store/keys';
import { deflateSync, gzipSync } from 'node:zlib';
import type Redis from 'ioredis';
import { closeRedis, createRedis } from '../../src/store/redis';
import { redisUrl } from '../support/prefix';
import { rawRequest } from '../support/raw-http';
import { basicAuth, startWiredGateway, WIRED, type WiredGateway } from '../support/wired-gateway';

/**
 * Bad input as a hostile client sends it, across the engine API, the launch, the admin pages and
 * the demo game, against the gateway as `npm start` wires it. For every input: a 4xx (never a
 * 5xx), no wallet call, no Redis key written, and the process answers afterwards.
 */
let w: WiredGateway;
let redis: Redis;
let session: string;

beforeAll(async () => {
  w = await startWiredGateway('hostile');
  redis = createRedis(redisUrl());
  const launch = await rawRequest(w.url, 'GET', `/launch?token=hostile-token&player_id=7&site_id=7&currency=EUR&game_id=slot-1`, { accept: 'application/json' });
  expect(launch.status).toBe(200);
  session = (JSON.parse(launch.text) as { session_id: string }).session_id;
});

afterAll(async () => {
  await closeRedis(redis);
  await w.close();
});

/** The gateway's own watch on the wallet (the circuit breaker's health-check lease and state) writes on a timer, not on input. */
const ownTimers = (): Set<string> => new Set([keysFor(w.prefix).breaker(), keysFor(w.prefix).breakerHealthLease()]);

async function keysUnderPrefix(): Promise<string[]> {
  const own = ownTimers();
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', `${w.prefix}*`, 'COUNT', 1000);
    cursor = next;
    keys.push(...found.filter((k) => !own.has(k)));
  } while (cursor !== '0');
  return keys.sort();
}

const walletCalls = (): number => w.sim.walletCalls().length;

interface Input {
  readonly method?: string;
  /** A function: the session id is known only after the launch. */
  readonly path: (s: string) => string;
  readonly headers?: Record<string, string>;
  readonly body?: Buffer | string | ((s: string) => string);
}

const engineKey = { authorization: `Bearer ${WIRED.engineKey}`, 'content-type': 'application/json' };
const admin = (): Record<string, string> => ({ authorization: basicAuth(WIRED.adminUser, WIRED.adminPassword) });
const bullBoardAdd = (queue: string, job: Record<string, unknown>): Input => ({
  method: 'POST',
  path: () => `/admin/queues/api/queues/${queue}/add`,
  headers: { ...admin(), 'content-type': 'application/json' },
  body: JSON.stringify(job),
});
const bet = (body: Buffer | string, headers: Record<string, string> = {}): Input => ({
  method: 'POST',
  path: (s) => `/engine/v1/sessions/${s}/bet`,
  headers: { ...engineKey, ...headers },
  body,
});
let n = 0;
/** Ids of a fresh round per input: a refusal must not lean on an earlier input's round or id. */
const good = (): string => {
  n += 1;
  return `"round_id":"r${n}","transaction_id":"t${n}"`;
};
const betBytes = (id: number[]): Buffer => Buffer.concat([Buffer.from(`{"round_id":"rb${id.join('-')}","transaction_id":"`), Buffer.from(id), Buffer.from('","amount":1}')]);
const launchQuery = 'token=t&player_id=7&site_id=7&currency=EUR&game_id=g';
const spin = (body: Input['body'], headers: Record<string, string> = {}): Input => ({
  method: 'POST',
  path: () => '/demo-game/api/spin',
  headers: { 'content-type': 'application/json', ...headers },
  body,
});

const inputs: [string, Input][] = [
  // engine API: authentication
  ['engine: no Authorization', { ...bet(`{${good()},"amount":1}`), headers: { 'content-type': 'application/json' } }],
  ['engine: a wrong Bearer key', bet(`{${good()},"amount":1}`, { authorization: 'Bearer wrong' })],
  ['engine: Basic instead of Bearer', bet(`{${good()},"amount":1}`, { authorization: basicAuth('a', 'b') })],
  ['engine: an 8 KiB Authorization header', bet(`{${good()},"amount":1}`, { authorization: `Bearer ${'k'.repeat(8192)}` })],
  // engine API: bodies
  ['engine: broken JSON', bet('{"round_id":')],
  ['engine: a JSON array', bet('[]')],
  ['engine: JSON nested 8000 deep', bet(`${'['.repeat(8000)}${']'.repeat(8000)}`)],
  ['engine: a duplicate key', bet(`{${good()},"transaction_id":"t2","amount":1}`)],
  ['engine: __proto__ as a field', bet(`{${good()},"amount":1,"__proto__":{"admin":true}}`)],
  ['engine: NaN amount', bet(`{${good()},"amount":NaN}`)],
  ['engine: an amount of 1e400', bet(`{${good()},"amount":1e400}`)],
  ['engine: a negative amount', bet(`{${good()},"amount":-5}`)],
  ['engine: an amount as a string', bet(`{${good()},"amount":"5"}`)],
  ['engine: a 37-character transaction_id', bet(`{"round_id":"r37","transaction_id":"${'x'.repeat(37)}","amount":1}`)],
  ['engine: a lone high surrogate in an id', bet('{"round_id":"rhi","transaction_id":"su\\ud800","amount":1}')],
  ['engine: a lone low surrogate in an id', bet('{"round_id":"rlo","transaction_id":"su\\udfff","amount":1}')],
  ['engine: invalid UTF-8 bytes in an id', bet(betBytes([0x6a, 0xff, 0xfe]))],
  ['engine: a UTF-8-encoded surrogate in an id', bet(betBytes([0x73, 0x75, 0xed, 0xa0, 0x80]))],
  ['engine: a body over 16 KiB', bet(`{${good()},"amount":1,"pad":"${'p'.repeat(16 * 1024)}"}`)],
  ['engine: a corrupt gzip body', bet(Buffer.from('\x1f\x8b\x08\x00garbage', 'latin1'), { 'content-encoding': 'gzip' })],
  ['engine: a corrupt brotli body', bet(Buffer.from('\xff\xff\xff\xffnot brotli', 'latin1'), { 'content-encoding': 'br' })],
  ['engine: a corrupt deflate body', bet(Buffer.from('not deflate at all'), { 'content-encoding': 'deflate' })],
  ['engine: gzip that inflates past 16 KiB', bet(gzipSync(`{${good()},"amount":1,"pad":"${'p'.repeat(64 * 1024)}"}`), { 'content-encoding': 'gzip' })],
  ['engine: an unknown Content-Encoding', bet(`{${good()},"amount":1}`, { 'content-encoding': 'x-zip' })],
  ['engine: gzip then deflate, declared as gzip only', bet(gzipSync(deflateSync(`{${good()},"amount":1}`)), { 'content-encoding': 'gzip' })],
  // engine API: paths
  ['engine: a malformed % escape in the session id', { ...bet(`{${good()},"amount":1}`), path: () => '/engine/v1/sessions/%E0%A4%A/bet' }],
  ['engine: %ZZ in a transaction id', { method: 'GET', path: () => '/engine/v1/transactions/%ZZ', headers: engineKey }],
  ['engine: an encoded lone surrogate in a transaction id', { method: 'GET', path: () => '/engine/v1/transactions/%ED%A0%80', headers: engineKey }],
  ['engine: an unknown session', { ...bet(`{${good()},"amount":1}`), path: () => '/engine/v1/sessions/no-such-session/bet' }],
  ['engine: a win of a bet never made', { ...bet(`{${good()},"bet_transaction_id":"nope","amount":1}`), path: (s) => `/engine/v1/sessions/${s}/win` }],
  ['engine: a bet by GET', { method: 'GET', path: (s) => `/engine/v1/sessions/${s}/bet`, headers: engineKey }],
  ['engine: verify of an unknown transaction', { method: 'POST', path: () => '/engine/v1/transactions/nope/verify', headers: engineKey, body: '{}' }],
  // launch
  ['launch: no query', { path: () => '/launch', headers: { accept: 'application/json' } }],
  ['launch: player_id 2^64', { path: () => `/launch?${launchQuery.replace('player_id=7', 'player_id=18446744073709551616')}` }],
  ['launch: a negative site_id', { path: () => `/launch?${launchQuery.replace('site_id=7', 'site_id=-7')}` }],
  ['launch: the token given twice', { path: () => `/launch?${launchQuery}&token=t2` }],
  ['launch: a 513-character token', { path: () => `/launch?${launchQuery.replace('token=t', `token=${'t'.repeat(513)}`)}` }],
  ['launch: a currency with symbols', { path: () => `/launch?${launchQuery.replace('currency=EUR', 'currency=E%3CU')}`, headers: { accept: 'text/html' } }],
  ['launch: a malformed % escape after the route', { path: () => '/launch/%E0%A4%A' }],
  // admin
  ['admin: no credentials', { path: () => '/admin/transactions/x1' }],
  ['admin: a wrong password', { path: () => '/admin/transactions/x1', headers: { authorization: basicAuth(WIRED.adminUser, 'guess') } }],
  ['admin: a malformed % escape', { path: () => '/admin/transactions/%E0%A4%A', headers: admin() }],
  ['admin: a 37-character id', { path: () => `/admin/transactions/${'x'.repeat(37)}`, headers: admin() }],
  ['admin: a list of another state', { path: () => '/admin/transactions?state=pending&limit=1000', headers: admin() }],
  ['admin: a redrive from another site', { method: 'POST', path: () => '/admin/transactions/x1/redrive', headers: { ...admin(), origin: 'https://evil.example' } }],
  ['admin: a bulk redrive filter sent as a form (curl -d)', { method: 'POST', path: () => '/admin/transactions/redrive', headers: { ...admin(), 'content-type': 'application/x-www-form-urlencoded' }, body: 'kind=debit' }],
  ['admin: a bulk redrive filter sent as text/plain', { method: 'POST', path: () => '/admin/transactions/redrive', headers: { ...admin(), 'content-type': 'text/plain' }, body: '{"kind":"debit"}' }],
  ['admin: an export from a time past what a Date holds', { path: () => '/admin/api/export?from=99999999999999999&to=99999999999999999', headers: admin() }],
  ['admin: audit paging before a stream id past 64 bits', { path: () => '/admin/api/audit?before=99999999999999999999999-0', headers: admin() }],
  ['admin: audit paging before 0-0', { path: () => '/admin/api/audit?before=0-0', headers: admin() }],
  ['admin: the audit page before a stream id past 64 bits', { path: () => '/admin/audit?before=18446744073709551616-0', headers: admin() }],
  ['admin: a Bull Board route with a malformed % escape', { method: 'PUT', path: () => '/admin/queues/api/queues/%E0%A4%A/pause', headers: admin() }],
  ['admin: a Bull Board change with broken JSON', { method: 'PUT', path: () => '/admin/queues/api/queues/wallet-retry/pause', headers: { ...admin(), 'content-type': 'application/json' }, body: '{"x":' }],
  ['admin: Bull Board adds a job to a money queue', bullBoardAdd('wallet-retry', { name: 'retry', data: { transactionId: 'x1' }, options: {} })],
  ['admin: Bull Board adds a job with the id "1"', bullBoardAdd('session-terminate', { name: 'terminate', data: {}, options: { jobId: '1' } })],
  ['admin: Bull Board adds a job with ":" in its id', bullBoardAdd('upkeep', { name: 'sweep', data: {}, options: { jobId: 'a:b' } })],
  ['admin: Bull Board adds a job with priority 3,000,000', bullBoardAdd('upkeep', { name: 'sweep', data: {}, options: { priority: 3_000_000 } })],
  ['admin: Bull Board pauses the upkeep', { method: 'PUT', path: () => '/admin/queues/api/queues/upkeep/pause', headers: admin() }],
  ['admin: a Bull Board change cross-site', { method: 'PUT', path: () => '/admin/queues/api/queues/wallet-retry/pause', headers: { ...admin(), 'sec-fetch-site': 'cross-site' } }],
  // demo game
  ['demo: a spin without a body', spin('')],
  ['demo: a spin with broken JSON', spin('{"session":')],
  ['demo: a spin of an unknown session', spin('{"session":"no-such-session"}')],
  ['demo: a spin with an odd stake', spin((s) => `{"session":"${s}","stake":"3.00"}`)],
  ['demo: a spin with fail_credit as a string', spin((s) => `{"session":"${s}","fail_credit":"yes"}`)],
  ['demo: a spin with an unknown field', spin('{"session":"s","stake":"1.00","admin":true}')],
  ['demo: a spin body over 1 KiB', spin(`{"session":"${'s'.repeat(2048)}"}`)],
  ['demo: a spin with a corrupt gzip body', spin(Buffer.from('\x1f\x8b\x08\x00garbage', 'latin1'), { 'content-encoding': 'gzip' })],
  ['demo: a spin with invalid UTF-8', spin(Buffer.from([0x7b, 0x22, 0x73, 0x65, 0x73, 0x73, 0x69, 0x6f, 0x6e, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]))],
  ['demo: a balance without a session', { method: 'POST', path: () => '/demo-game/api/balance', headers: { 'content-type': 'application/json' }, body: '{}' }],
  ['demo: a record with a malformed % escape', { path: () => '/demo-game/api/transactions/%E0%A4%A?session=s' }],
  ['demo: a record without a session', { path: () => '/demo-game/api/transactions/t1' }],
  // anywhere
  ['a malformed % escape on no route', { path: () => '/%E0%A4%A' }],
  ['a POST to /healthz', { method: 'POST', path: () => '/healthz', body: '{}' }],
  ['a 20 KiB URL', { path: () => `/launch?token=${'t'.repeat(20 * 1024)}` }],
];

describe('hostile input', () => {
  it('has at least 40 inputs', () => {
    expect(inputs.length).toBeGreaterThanOrEqual(40);
  });

  it.each(inputs)('%s: a 4xx, no wallet call, no Redis key, and the gateway still answers', async (_label, input) => {
    const keysBefore = await keysUnderPrefix();
    const callsBefore = walletCalls();
    const body = typeof input.body === 'function' ? input.body(session) : input.body;
    const res = await rawRequest(w.url, input.method ?? 'GET', input.path(session), input.headers, body);
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    // Node answers a head too large itself, before the app, with no body: nothing to sniff.
    if (res.status !== 431) expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(walletCalls()).toBe(callsBefore);
    expect(await keysUnderPrefix()).toEqual(keysBefore);
    expect((await rawRequest(w.url, 'GET', '/healthz')).status).toBe(200);
  });

  it('admin: a redrive of an unknown id: 404, no wallet call, and nothing written but its audit entry (refused actions are audited; so many a minute)', async () => {
    const keysBefore = await keysUnderPrefix();
    const callsBefore = walletCalls();
    const res = await rawRequest(w.url, 'POST', '/admin/transactions/x1/redrive', admin());
    expect(res.status).toBe(404);
    expect(walletCalls()).toBe(callsBefore);
    const written = [keysFor(w.prefix).audit(), keysFor(w.prefix).auditUnknown()].filter((k) => !keysBefore.includes(k)).sort();
    expect((await keysUnderPrefix()).filter((k) => !keysBefore.includes(k))).toEqual(written);
    const [newest] = await redis.xrevrange(`${w.prefix}:audit`, '+', '-', 'COUNT', 1);
    expect(newest?.[1]).toEqual(expect.arrayContaining(['action', 'redrive', 'transaction_id', 'x1', 'result', 'not_found']));
  });
});

describe('answers', () => {
  it('say what they are on every route, answered or refused: X-Content-Type-Options nosniff', async () => {
    const answers = [
      await rawRequest(w.url, 'GET', '/healthz'),
      await rawRequest(w.url, 'GET', '/metrics'),
      await rawRequest(w.url, 'POST', `/engine/v1/sessions/${session}/balance`, engineKey, '{}'),
      await rawRequest(w.url, 'GET', '/launch?token=nosniff-token&player_id=8&site_id=7&currency=EUR&game_id=slot-1'),
      await rawRequest(w.url, 'GET', '/demo-game'),
      await rawRequest(w.url, 'GET', '/admin', admin()),
      await rawRequest(w.url, 'GET', '/no-such-route'),
    ];
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 302, 200, 200, 404]);
    for (const a of answers) expect(a.headers['x-content-type-options']).toBe('nosniff');
  });
});

describe('metric labels', () => {
  it('label a request with the route pattern it matched, whatever the letter case of its path', async () => {
    for (const path of ['/demo-game/api/balance', '/DEMO-GAME/API/balance', '/Demo-Game/Api/balance']) {
      expect((await rawRequest(w.url, 'POST', path, { 'content-type': 'application/json' }, '{}')).status).toBe(400);
    }
    const metrics = await rawRequest(w.url, 'GET', '/metrics');
    const routes = [...metrics.text.matchAll(/^engine_requests_total\{route="([^"]*)"/gm)].map((m) => m[1]);
    expect([...new Set(routes.filter((r) => r!.toLowerCase() === '/demo-game/api/balance'))]).toEqual(['/demo-game/api/balance']);
  });
});
