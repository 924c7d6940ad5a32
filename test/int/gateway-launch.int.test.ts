import request from 'supertest';
import { Code } from '../../src/wallet/codes';
import { launch, newPlayerId, startHarness, uniqueId, type Harness } from '../support/gateway-harness';

const U64_MAX = '18446744073709551615';
let h: Harness;

beforeAll(async () => {
  h = await startHarness({ label: 'gw-launch' });
});

afterAll(async () => {
  await h.close();
});

beforeEach(() => {
  h.sim.faults.clear();
  h.sim.clearCalls();
});

function query(overrides: Record<string, string | undefined> = {}): Record<string, string> {
  const q: Record<string, string | undefined> = {
    token: uniqueId('tok'),
    player_id: newPlayerId(),
    site_id: '7',
    currency: 'EUR',
    game_id: 'slot-1',
    ...overrides,
  };
  return Object.fromEntries(Object.entries(q).filter((e): e is [string, string] => e[1] !== undefined));
}

describe('GET /launch', () => {
  it('redirects to the game with a new session id and never the token', async () => {
    const q = query({ game_id: 'slot 1&x' });
    const res = await request(h.url).get('/launch').query(q).set('Accept', 'text/html');
    expect(res.status).toBe(302);
    const location = res.headers.location as string;
    const url = new URL(location);
    expect(url.origin + url.pathname).toBe('https://games.example/play');
    expect(url.searchParams.get('game')).toBe('slot 1&x');
    const sessionId = url.searchParams.get('session') as string;
    expect(sessionId).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(location).not.toContain(q.token);
    expect(res.text).not.toContain(q.token);
    expect(res.headers['x-request-id']).toBeDefined();

    const session = await h.sessions.get(sessionId);
    expect(session).toMatchObject({ token: q.token, playerId: q.player_id, siteId: '7', currency: 'EUR', gameId: 'slot 1&x', balance: '1000.00', state: 'open' });
  });

  it('answers JSON with Accept: application/json, and a relaunch gives a new session', async () => {
    const q = query();
    const first = await request(h.url).get('/launch').query(q).set('Accept', 'application/json');
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      session_id: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/),
      balance: 1000,
      currency: 'EUR',
      game_url: expect.stringContaining('session='),
      request_id: first.headers['x-request-id'],
    });
    expect(first.text).toContain('"balance":1000.00');
    expect(first.text).not.toContain(q.token);
    const second = await request(h.url).get('/launch').query(q).set('Accept', 'application/json');
    expect(second.status).toBe(200);
    expect(second.body.session_id).not.toBe(first.body.session_id);
    expect(await h.sessions.get(first.body.session_id)).toBeDefined();
  });

  it('sends provider, player and site ids of 2^64−1 to the wallet with every digit', async () => {
    const q = query({ player_id: U64_MAX, site_id: U64_MAX });
    const res = await request(h.url).get('/launch').query(q).set('Accept', 'application/json');
    expect(res.status).toBe(200);
    const auth = h.sim.calls().find((c) => c.operation === 'authenticate');
    expect(auth?.rawBody).toContain(`"player_id":${U64_MAX}`);
    expect(auth?.rawBody).toContain(`"site_id":${U64_MAX}`);
    expect(auth?.rawBody).toContain(`"provider_id":${U64_MAX}`);
    expect((await h.sessions.get(res.body.session_id))?.playerId).toBe(U64_MAX);
  });

  it.each([
    ['nothing at all', {}, ['token', 'player_id', 'site_id', 'currency', 'game_id']],
    ['no token', { token: undefined }, ['token']],
    ['player id over 2^64−1', { player_id: '18446744073709551616' }, ['player_id']],
    ['negative site id', { site_id: '-1' }, ['site_id']],
    ['player id with a fraction', { player_id: '1.5' }, ['player_id']],
    ['empty currency and game', { currency: '', game_id: '' }, ['currency', 'game_id']],
  ])('refuses %s with 400 naming every field and no wallet call', async (_label, overrides, fields) => {
    const q = Object.keys(overrides).length === 0 ? {} : query(overrides as Record<string, string | undefined>);
    const res = await request(h.url).get('/launch').query(q).set('Accept', 'application/json');
    expect(res.status).toBe(400);
    expect(res.body.state).toBe('failed');
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    expect(res.body.error.wallet_code).toBeNull();
    expect((res.body.error.fields as { field: string }[]).map((f) => f.field).sort()).toEqual([...fields].sort());
    expect(h.sim.walletCalls()).toHaveLength(0);
  });

  it('refuses a parameter given twice', async () => {
    const res = await request(h.url).get(`/launch?token=a&token=b&player_id=1&site_id=1&currency=EUR&game_id=g`).set('Accept', 'application/json');
    expect(res.status).toBe(400);
    expect(res.body.error.fields).toEqual([{ field: 'token', message: expect.any(String) }]);
    expect(h.sim.walletCalls()).toHaveLength(0);
  });

  it('maps a wallet refusal to the spec status, as JSON or as an HTML page', async () => {
    h.sim.faults.failNext('authenticate', 1, Code.SiteDisabled);
    const json = await request(h.url).get('/launch').query(query()).set('Accept', 'application/json');
    expect(json.status).toBe(403);
    expect(json.body).toEqual({
      state: 'failed',
      error: { code: 'WALLET_REJECTED', wallet_code: 25, message: expect.any(String) },
      request_id: json.headers['x-request-id'],
    });

    h.sim.faults.failNext('authenticate', 1, Code.InternalServiceError);
    const q = query();
    const html = await request(h.url).get('/launch').query(q).set('Accept', 'text/html,application/xhtml+xml,*/*;q=0.8');
    expect(html.status).toBe(500);
    expect(html.headers['content-type']).toMatch(/text\/html/);
    expect(html.text).toContain('WALLET_REJECTED');
    expect(html.text).not.toContain(q.token);
  });

  it('answers 422 for a wallet code outside the spec table and 503 for an unknown outcome', async () => {
    // A token first authenticated for another player: the simulator's 104.
    const { token } = await launch(h, { playerId: newPlayerId() });
    const other = await request(h.url).get('/launch').query(query({ token, player_id: newPlayerId() })).set('Accept', 'application/json');
    expect(other.status).toBe(422);
    expect(other.body.error).toMatchObject({ code: 'WALLET_REJECTED', wallet_code: Code.InvalidToken });

    h.sim.faults.nonJson('authenticate', 1);
    const unknown = await request(h.url).get('/launch').query(query()).set('Accept', 'application/json');
    expect(unknown.status).toBe(503);
    expect(unknown.body.error).toMatchObject({ code: 'WALLET_UNAVAILABLE', wallet_code: null });
  });

  it('keeps the token out of every log line', async () => {
    const token = `secret-token-${Date.now()}`;
    await request(h.url).get('/launch').query(query({ token })).set('Accept', 'application/json');
    await request(h.url).get('/launch').query(query({ token, player_id: 'x' }));
    expect(h.logs.length).toBeGreaterThan(0);
    expect(h.logs.join('\n')).not.toContain(token);
    expect(h.logs.some((l) => l.includes('"path":"/launch"'))).toBe(true);
  });

  it('answers /healthz', async () => {
    const res = await request(h.url).get('/healthz');
    expect(res.status).toBe(200);
  });
});
