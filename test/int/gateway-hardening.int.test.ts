import request from 'supertest';
import { ADMIN_AUTH_LIMIT } from '../../src/http/admin';
import { SERVER_TIMEOUTS } from '../../src/http/server-timeouts';
import { rawRequest } from '../support/raw-http';
import { basicAuth, startWiredGateway, WIRED, type WiredGateway } from '../support/wired-gateway';

/**
 * The edges of the wired gateway (startGateway) a hostile client or a hostile site pokes at:
 * malformed % escapes on Express routes, the server's timeouts, the admin pages' hardening.
 */
let w: WiredGateway;
const errorLines = (): number => w.logs.filter((l) => l.includes('"level":50')).length;

beforeAll(async () => {
  w = await startWiredGateway('gw-hardening');
});

afterAll(async () => {
  await w.close();
});

describe('a malformed % escape in a route parameter', () => {
  it.each([
    ['the admin record', '/admin/transactions/%E0%A4%A', true],
    ['the admin redrive', '/admin/transactions/%E0%A4%A/redrive', true],
    ['the demo game record, without auth', '/demo-game/api/transactions/%E0%A4%A?session=s1', false],
    ['a Bull Board API route', '/admin/queues/api/queues/%E0%A4%A/clean/failed', true],
  ])('on %s is 400, not a logged 500', async (_label, path, admin) => {
    const before = errorLines();
    const method = path.endsWith('redrive') || path.endsWith('failed') ? 'PUT' : 'GET';
    const res = await rawRequest(w.url, path.endsWith('redrive') ? 'POST' : method, path, admin ? { authorization: w.adminAuth } : {});
    expect(res.status).toBe(400);
    expect(JSON.parse(res.text)).toMatchObject({ state: 'failed', error: { code: 'VALIDATION_FAILED', fields: [{ field: 'path' }] } });
    expect(errorLines()).toBe(before);
  });
});

describe('server timeouts', () => {
  it('are set deliberately on the gateway server, the default body deadline is the contract 10 s', () => {
    expect(SERVER_TIMEOUTS).toEqual({ headersTimeoutMs: 10_000, requestTimeoutMs: 20_000, keepAliveTimeoutMs: 65_000 });
    expect(w.gateway.server.headersTimeout).toBe(SERVER_TIMEOUTS.headersTimeoutMs);
    expect(w.gateway.server.requestTimeout).toBe(SERVER_TIMEOUTS.requestTimeoutMs);
    expect(w.gateway.server.keepAliveTimeout).toBe(SERVER_TIMEOUTS.keepAliveTimeoutMs);
  });
});

describe('admin pages', () => {
  it('cannot be framed, whether the credentials were right or not', async () => {
    for (const auth of [w.adminAuth, undefined]) {
      const req = request(w.url).get('/admin/queues');
      if (auth) req.set('Authorization', auth);
      const res = await req;
      expect(res.status).toBe(auth ? 200 : 401);
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    }
  });

  it('send no X-Powered-By, Bull Board included', async () => {
    for (const path of ['/admin/queues', '/admin/queues/api/queues', '/healthz', '/demo-game', '/admin/transactions/nope']) {
      const res = await request(w.url).get(path).set('Authorization', w.adminAuth);
      expect(res.status).toBeLessThan(500);
      expect(res.headers['x-powered-by']).toBeUndefined();
    }
  });

  it.each([
    ['Origin of another site', { origin: 'https://evil.example' }],
    ['Origin null', { origin: 'null' }],
    ['Sec-Fetch-Site cross-site', { 'sec-fetch-site': 'cross-site' }],
    ['Sec-Fetch-Site same-site', { 'sec-fetch-site': 'same-site' }],
  ])('refuse a change with %s (403), even with the right credentials', async (_label, headers) => {
    const res = await request(w.url).post('/admin/transactions/nope/redrive').set('Authorization', w.adminAuth).set(headers);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('CROSS_ORIGIN_REFUSED');
    const board = await request(w.url).put('/admin/queues/api/queues/retries/pause').set('Authorization', w.adminAuth).set(headers);
    expect(board.status).toBe(403);
  });

  it('take a change from their own origin, a bookmark, or a client that sends neither header', async () => {
    const own = new URL(w.url).host;
    for (const headers of [{ origin: `http://${own}`, 'sec-fetch-site': 'same-origin' }, { origin: `http://${own}` }, { 'sec-fetch-site': 'none' }, {}]) {
      const res = await request(w.url).post('/admin/transactions/nope/redrive').set('Authorization', w.adminAuth).set(headers);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('TRANSACTION_NOT_FOUND');
    }
    // reading is never refused for its origin
    await request(w.url).get('/admin/transactions/nope').set('Authorization', w.adminAuth).set('Origin', 'https://evil.example').expect(404);
  });

  // Last: it leaves this gateway refusing 127.0.0.1 for the rest of the window.
  it('hold an address back with 429 and Retry-After after repeated wrong credentials, the right ones included', async () => {
    const wrong = basicAuth(WIRED.adminUser, 'guess');
    for (let i = 0; i < ADMIN_AUTH_LIMIT.max; i += 1) {
      await request(w.url).get('/admin/transactions/nope').set('Authorization', wrong).expect(401);
    }
    const held = await request(w.url).get('/admin/transactions/nope').set('Authorization', w.adminAuth).expect(429);
    expect(held.body.error.code).toBe('TOO_MANY_ATTEMPTS');
    expect(Number(held.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(held.headers['retry-after'])).toBeLessThanOrEqual(ADMIN_AUTH_LIMIT.windowMs / 1000);
    // the engine API and the probes are not behind it
    await request(w.url).get('/healthz').expect(200);
  });
});
