import { join } from 'node:path';
import request from 'supertest';
import { loadWorkerConfig } from '../../src/config/env';
import { createClosers, startWith } from '../../src/lib/lifecycle';
import { retryDelayMs } from '../../src/duties/retry-policy';
import { waitFor } from '../../src/lib/wait-for';
import type { RunningGateway } from '../../src/main/gateway';
import { createLogger } from '../../src/observability/logger';
import { createMetrics } from '../../src/observability/metrics';
import type { RunningSimulator } from '../../src/sim';
import { Code } from '../../src/wallet/codes';
import { startWorker, type RunningWorker } from '../../workers/worker';
import { body, newPlayerId, uniqueId } from './gateway-harness';
import { logSink } from './log-sink';
import { testPrefix } from './prefix';
import { startTwoWallets, TWO_WALLETS_TIMEOUT_MS } from './two-wallets';

/** Where the suite's Redis is: the variables of the gateway and the worker, and how to leave nothing behind. */
export interface RedisPlacement {
  /** Names the suite's key prefix. */
  readonly label: string;
  /** REDIS_URL or REDIS_CLUSTER_NODES, REDIS_SHARDS: started (a cluster) or chosen here. */
  start(): Promise<Record<string, string>>;
  stop(prefix: string): Promise<void>;
}

/**
 * Many wallets and many engines in one deployment (contract 11), through the real gateway, the real
 * worker and two real simulators over HTTP, each checking its own Basic credentials and signature:
 * wallet `default` (HMAC-SHA256, hex) and wallet `casino-b` (HMAC-SHA512, base64, another provider
 * id). Engine `studio-x` may use both; engine `studio-y` only `casino-b`, with two keys (a rotation).
 */
const A = { user: 'gw-a', password: 'pw-a-secret-0001', secret: 'sign-a-secret-0002', provider: '11' } as const;
const B = { user: 'gw-b', password: 'pw-b-secret-0003', secret: 'sign-b-secret-0004', provider: '18446744073709551615' } as const;
const KEYS = { x: 'studio-x-key-0005', y1: 'studio-y-key-0006', y2: 'studio-y-key-next-0007' } as const;
const ADMIN_PASSWORD = 'ops-password-0008';
/** casino-b's max_in_flight: the gateway's share alone, or one each for the gateway and a worker. */
const B_MAX_IN_FLIGHT = 2;
const SECRETS = [A.password, A.secret, B.password, B.secret, KEYS.x, KEYS.y1, KEYS.y2, ADMIN_PASSWORD];

export function walletsSuite(placement: RedisPlacement): void {
  let prefix: string;
  const gatewayLogs = logSink();
  const workerLogs = logSink();
  let simA: RunningSimulator;
  let simB: RunningSimulator;
  let gateway: RunningGateway;
  let env: Record<string, string>;
  const answers: string[] = [];
  const closers = createClosers();

  beforeAll(async () => {
    prefix = testPrefix(placement.label);
    await startWith(closers, async () => {
      const redisEnv = await placement.start();
      closers.defer('redis', () => placement.stop(prefix));
      ({ simA, simB, gateway, env } = await startTwoWallets(closers, {
        label: 'wallets-gateway',
        a: { id: 'default', ...A },
        b: { id: 'casino-b', ...B },
        files: { 'casino-b-signing': `${B.secret}\n`, 'studio-y-next': KEYS.y2 },
        registry: (dir) => ({
          b: { signing_secret: { file: join(dir, 'casino-b-signing') }, max_in_flight: B_MAX_IN_FLIGHT },
          engines: [
            { id: 'studio-x', keys: [{ env: 'TEST_X_KEY' }], wallets: ['default', 'casino-b'] },
            { id: 'studio-y', keys: [KEYS.y1, { file: join(dir, 'studio-y-next') }], wallets: ['casino-b'] },
          ],
        }),
        env: { ...redisEnv, QUEUE_PREFIX: prefix, TEST_X_KEY: KEYS.x, GATEWAY_PROCESSES: '1', ADMIN_USER: 'ops', ADMIN_PASSWORD },
        logs: gatewayLogs.destination,
      }));
    });
  });

  afterAll(async () => {
    await closers.closeAll();
  });

  afterEach(() => {
    simA.faults.clear();
    simB.faults.clear();
  });

  function kept<T extends { text: string }>(res: T): T {
    answers.push(res.text);
    return res;
  }

  interface Launched {
    readonly sessionId: string;
  }

  async function launch(path: string, q: { token: string; playerId: string; siteId?: string }): Promise<Launched> {
    const res = kept(await request(gateway.url).get(path).query({ token: q.token, player_id: q.playerId, site_id: q.siteId ?? '7', currency: 'EUR', game_id: 'slot-1' }).set('Accept', 'application/json'));
    if (res.status !== 200) throw new Error(`launch ${path} failed: ${res.status} ${res.text}`);
    return { sessionId: (res.body as { session_id: string }).session_id };
  }

  async function call(key: string, path: string, fields: Record<string, unknown> = {}) {
    return kept(await request(gateway.url).post(`/engine/v1${path}`).set('Authorization', `Bearer ${key}`).set('Content-Type', 'application/json').send(body(fields)));
  }

  async function lookup(key: string, id: string, wallet?: string) {
    const path = `/engine/v1/transactions/${encodeURIComponent(id)}${wallet === undefined ? '' : `?wallet=${wallet}`}`;
    return kept(await request(gateway.url).get(path).set('Authorization', `Bearer ${key}`));
  }

  const callsOf = (sim: RunningSimulator, operation: string, transactionId?: string) =>
    sim.walletCalls().filter((c) => c.operation === operation && (transactionId === undefined || c.transactionId === transactionId));

  /**
   * A bet in a casino-b session, then its win, which casino-b refuses (code 30) the first `refusals`
   * times: answered 202, pending. `token`: the session's wallet token (default a fresh one).
   */
  async function pendingWinAtB(refusals: number, options: { key?: string; token?: string; playerId?: string } = {}) {
    const key = options.key ?? KEYS.x;
    const token = options.token ?? uniqueId('tok');
    const b = await launch('/launch/casino-b', { token, playerId: options.playerId ?? newPlayerId() });
    const sb = encodeURIComponent(b.sessionId);
    const bet = uniqueId('bet');
    const win = uniqueId('win');
    expect((await call(key, `/sessions/${sb}/bet`, { round_id: 'r', transaction_id: bet, amount: '1.00' })).status).toBe(200);
    simB.faults.failNext('credit', refusals, Code.ClientError, { transactionId: win });
    expect((await call(key, `/sessions/${sb}/win`, { round_id: 'r', transaction_id: win, bet_transaction_id: bet, amount: '4.00' })).status).toBe(202);
    return { sb, token, win };
  }

  describe('routing', () => {
    it('GET /launch goes to wallet default and GET /launch/{wallet_id} to that wallet, each with its own credentials, signature and provider id', async () => {
      const token = uniqueId('tok');
      const playerId = newPlayerId();
      const a = await launch('/launch', { token, playerId });
      const b = await launch('/launch/casino-b', { token, playerId });
      expect(callsOf(simA, 'authenticate').filter((c) => c.body?.token === token)).toHaveLength(1);
      expect(callsOf(simB, 'authenticate').filter((c) => c.body?.token === token)).toHaveLength(1);
      expect(callsOf(simA, 'authenticate').find((c) => c.body?.token === token)!.body).toMatchObject({ provider_id: A.provider });
      expect(callsOf(simB, 'authenticate').find((c) => c.body?.token === token)!.body).toMatchObject({ provider_id: B.provider });
      expect(a.sessionId).not.toContain('~');
      expect(b.sessionId.startsWith('casino-b~')).toBe(true);

      const betA = uniqueId('bet');
      const betB = uniqueId('bet');
      expect((await call(KEYS.x, `/sessions/${a.sessionId}/bet`, { round_id: 'r1', transaction_id: betA, amount: '1.00' })).status).toBe(200);
      expect((await call(KEYS.x, `/sessions/${encodeURIComponent(b.sessionId)}/bet`, { round_id: 'r1', transaction_id: betB, amount: '2.00' })).status).toBe(200);
      expect(callsOf(simA, 'debit', betA)).toHaveLength(1);
      expect(callsOf(simB, 'debit', betA)).toHaveLength(0);
      expect(callsOf(simB, 'debit', betB)).toHaveLength(1);
      expect(callsOf(simB, 'debit', betB)[0]!.body).toMatchObject({ provider_id: B.provider, amount: '2.00' });
      expect(callsOf(simA, 'debit', betB)).toHaveLength(0);
    });

    it('an unknown wallet id gets 404 WALLET_NOT_FOUND and no wallet call', async () => {
      const token = uniqueId('tok');
      for (const path of ['/launch/casino-z', '/launch/Casino-B', `/launch/${'a'.repeat(33)}`]) {
        const res = kept(await request(gateway.url).get(path).query({ token, player_id: '1', site_id: '7', currency: 'EUR', game_id: 'g' }).set('Accept', 'application/json'));
        expect(res.status).toBe(404);
        expect(res.body).toMatchObject({ state: 'failed', error: { code: 'WALLET_NOT_FOUND' } });
      }
      expect([...simA.walletCalls(), ...simB.walletCalls()].filter((c) => c.body?.token === token)).toEqual([]);
    });
  });

  describe('wallets are separate worlds', () => {
    it('the same token, player, site, round and transaction ids in two wallets never meet: idempotency, round rules and ending stay per wallet', async () => {
      const token = uniqueId('tok');
      const playerId = newPlayerId();
      const a = await launch('/launch', { token, playerId });
      const b = await launch('/launch/casino-b', { token, playerId });
      const sb = encodeURIComponent(b.sessionId);
      const bet = uniqueId('bet');
      const win = uniqueId('win');

      // One transaction id, one round, two wallets: two bets, neither a repeat nor a second bet of the other.
      const betA = await call(KEYS.x, `/sessions/${a.sessionId}/bet`, { round_id: 'shared-round', transaction_id: bet, amount: '1.00' });
      const betB = await call(KEYS.x, `/sessions/${sb}/bet`, { round_id: 'shared-round', transaction_id: bet, amount: '5.00' });
      expect(betA.status).toBe(200);
      expect(betB.status).toBe(200);
      expect(callsOf(simA, 'debit', bet)).toHaveLength(1);
      expect(callsOf(simB, 'debit', bet)).toHaveLength(1);

      // Idempotency per wallet: B's body repeated in B is B's stored answer; A's id with B's body in A is a conflict.
      const repeatB = await call(KEYS.x, `/sessions/${sb}/bet`, { round_id: 'shared-round', transaction_id: bet, amount: '5.00' });
      expect(repeatB.status).toBe(200);
      expect(repeatB.body).toEqual({ ...(betB.body as object), request_id: (repeatB.body as { request_id: string }).request_id });
      expect((await call(KEYS.x, `/sessions/${a.sessionId}/bet`, { round_id: 'shared-round', transaction_id: bet, amount: '5.00' })).body).toMatchObject({ error: { code: 'IDEMPOTENCY_CONFLICT' } });
      expect(callsOf(simB, 'debit', bet)).toHaveLength(1);

      // A's round closes with its win; B's round of the same id stays open and takes its own win.
      expect((await call(KEYS.x, `/sessions/${a.sessionId}/win`, { round_id: 'shared-round', transaction_id: win, bet_transaction_id: bet, amount: '3.00' })).status).toBe(200);
      expect((await call(KEYS.x, `/sessions/${a.sessionId}/bet`, { round_id: 'shared-round', transaction_id: uniqueId('bet'), amount: '1.00' })).body).toMatchObject({ error: { code: 'ROUND_CLOSED' } });
      const winB = await call(KEYS.x, `/sessions/${sb}/win`, { round_id: 'shared-round', transaction_id: win, bet_transaction_id: bet, amount: '7.00', round_closed: false });
      expect(winB.status).toBe(200);
      expect(callsOf(simB, 'credit', win)[0]!.body).toMatchObject({ amount: '7.00', provider_id: B.provider });

      // The lookup: held in both of studio-x's wallets → ambiguous; ?wallet= picks one; studio-y sees B's only.
      const ambiguous = await lookup(KEYS.x, bet);
      expect(ambiguous.status).toBe(409);
      expect(ambiguous.body).toMatchObject({ error: { code: 'AMBIGUOUS_TRANSACTION' } });
      expect((ambiguous.body as { error: { message: string } }).error.message).toContain('default, casino-b');
      expect((await lookup(KEYS.x, bet, 'default')).body).toMatchObject({ transaction_id: bet, amount: 1, session_id: a.sessionId });
      expect((await lookup(KEYS.x, bet, 'casino-b')).body).toMatchObject({ transaction_id: bet, amount: 5, session_id: b.sessionId });
      expect((await lookup(KEYS.y1, bet)).body).toMatchObject({ transaction_id: bet, amount: 5 });

      // Ending A's session terminates A's token only: B's session on the same token plays on.
      const ended = await call(KEYS.x, `/sessions/${a.sessionId}/end`);
      expect(ended.body).toMatchObject({ state: 'succeeded' });
      expect(callsOf(simA, 'terminate').filter((c) => c.body?.token === token)).toHaveLength(1);
      expect(callsOf(simB, 'terminate').filter((c) => c.body?.token === token)).toHaveLength(0);
      expect((await call(KEYS.x, `/sessions/${sb}/balance`)).body).toMatchObject({ state: 'succeeded', balance: 1002 });

      // B's records live under B's keys, A's under today's layout.
      const walletB = gateway.parts.wallets.get('casino-b')!;
    const home = gateway.parts.wallets.get('default')!;
    const player = { playerId, siteId: '7' };
    const keyB = walletB.layout.keys(walletB.transactions.shardOf(player)).transaction(bet);
    const keyA = home.layout.keys(home.transactions.shardOf(player)).transaction(bet);
    expect(keyB.startsWith(`${prefix}:w:casino-b:`) || keyB.startsWith(`{${prefix}:w:casino-b-s`)).toBe(true);
    expect(keyA.startsWith(`${prefix}:tx:`) || keyA.startsWith(`{${prefix}-s`)).toBe(true);
    // One key at a time: on a cluster the two are in different slots.
    expect(await gateway.parts.redis.exists(keyA)).toBe(1);
    expect(await gateway.parts.redis.exists(keyB)).toBe(1);
    });
  });

  describe('engine scopes', () => {
    it('an engine acts only on its wallets: another wallet\'s session or transaction answers exactly as an unknown id', async () => {
      const a = await launch('/launch', { token: uniqueId('tok'), playerId: newPlayerId() });
      const bet = uniqueId('bet');
      expect((await call(KEYS.x, `/sessions/${a.sessionId}/bet`, { round_id: 'r', transaction_id: bet, amount: '1.00' })).status).toBe(200);

      const fields = { round_id: 'r2', transaction_id: uniqueId('bet'), amount: '1.00' };
      const foreign = await call(KEYS.y1, `/sessions/${a.sessionId}/bet`, fields);
      const unknown = await call(KEYS.y1, `/sessions/${'Q'.repeat(22)}/bet`, fields);
      expect(foreign.status).toBe(404);
      expect(foreign.body).toEqual({ ...(unknown.body as object), request_id: (foreign.body as { request_id: string }).request_id });
      expect(callsOf(simA, 'debit', fields.transaction_id)).toHaveLength(0);
      expect((await call(KEYS.y1, `/sessions/${a.sessionId}/balance`)).body).toMatchObject({ error: { code: 'SESSION_NOT_FOUND' } });
      expect((await call(KEYS.y1, `/sessions/${a.sessionId}/end`)).body).toMatchObject({ error: { code: 'SESSION_NOT_FOUND' } });

      const notFound = (await lookup(KEYS.y1, uniqueId('never'))).body as { error: unknown };
      for (const res of [await lookup(KEYS.y1, bet), await lookup(KEYS.y1, bet, 'default'), await lookup(KEYS.y1, bet, 'casino-z')]) {
        expect(res.status).toBe(404);
        expect((res.body as { error: unknown }).error).toEqual(notFound.error);
      }
      const verify = kept(await request(gateway.url).post(`/engine/v1/transactions/${bet}/verify?wallet=default`).set('Authorization', `Bearer ${KEYS.y1}`).set('Content-Type', 'application/json').send('{}'));
      expect(verify.status).toBe(404);
      expect(callsOf(simA, 'status', bet)).toHaveLength(0);
      expect((await lookup(KEYS.x, bet, 'Not_A_Wallet')).body).toMatchObject({ error: { code: 'VALIDATION_FAILED', fields: [{ field: 'wallet' }] } });
    });

    it('both keys of an engine in rotation work; any other key is 401', async () => {
      const b = await launch('/launch/casino-b', { token: uniqueId('tok'), playerId: newPlayerId() });
      const sb = encodeURIComponent(b.sessionId);
      expect((await call(KEYS.y1, `/sessions/${sb}/balance`)).status).toBe(200);
      expect((await call(KEYS.y2, `/sessions/${sb}/balance`)).status).toBe(200);
      expect((await call(`${KEYS.y2}x`, `/sessions/${sb}/balance`)).status).toBe(401);
    });

    it('verify asks the wallet of the record it finds, with that wallet\'s signature', async () => {
      const b = await launch('/launch/casino-b', { token: uniqueId('tok'), playerId: newPlayerId() });
      const bet = uniqueId('bet');
      expect((await call(KEYS.x, `/sessions/${encodeURIComponent(b.sessionId)}/bet`, { round_id: 'r', transaction_id: bet, amount: '1.00' })).status).toBe(200);
      const res = kept(await request(gateway.url).post(`/engine/v1/transactions/${bet}/verify`).set('Authorization', `Bearer ${KEYS.x}`).set('Content-Type', 'application/json').send('{}'));
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ transaction_id: bet, wallet: { outcome: 'ok' } });
      expect(callsOf(simB, 'status', bet)).toHaveLength(1);
      expect(callsOf(simA, 'status', bet)).toHaveLength(0);
    });
  });

  describe('operators', () => {
    it('GET /admin/api/wallets lists each wallet with its breaker, calls in flight, pending and dead, and no secret or URL', async () => {
      await pendingWinAtB(1);

      const res = kept(await request(gateway.url).get('/admin/api/wallets').auth('ops', ADMIN_PASSWORD));
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        wallets: [
          { id: 'default', provider_id: A.provider, breaker: 'closed', in_flight: 0, pending: 0, dead: 0 },
          { id: 'casino-b', provider_id: B.provider, breaker: 'closed', in_flight: 0, pending: 1, dead: 0 },
        ],
        request_id: expect.any(String),
      });
      expect(res.text).not.toContain(simA.url);
      expect(res.text).not.toContain(simB.url);
      expect((await request(gateway.url).get('/admin/api/wallets')).status).toBe(401);
    });

    it('the wallet series carry a `wallet` label, and every line about a wallet call names its wallet', async () => {
      const b = await launch('/launch/casino-b', { token: uniqueId('tok'), playerId: newPlayerId() });
      const bet = uniqueId('bet');
      expect((await call(KEYS.x, `/sessions/${encodeURIComponent(b.sessionId)}/bet`, { round_id: 'r', transaction_id: bet, amount: '1.00' })).status).toBe(200);
      const text = (await request(gateway.url).get('/metrics')).text;
      expect(text).toMatch(/^wallet_calls_total\{operation="debit",outcome="ok",code="1",wallet="casino-b"\} [1-9]/m);
      expect(text).toMatch(/^wallet_calls_total\{operation="authenticate",outcome="ok",code="1",wallet="default"\} [1-9]/m);
      // The breaker's gauge is set at its first refresh of the shared state.
      await waitFor('the breaker series of casino-b', async () => /^wallet_breaker_state\{wallet="casino-b"\} 0$/m.test((await request(gateway.url).get('/metrics')).text), 10_000);
      const lines = gatewayLogs.logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.transaction_id === bet);
      expect(lines.length).toBeGreaterThan(0);
      expect(lines.every((line) => line.wallet === 'casino-b')).toBe(true);
    });
  });

  describe('max_in_flight of casino-b (2), the gateway alone', () => {
    it('two bets open at a slow casino-b: a third is refused at once with 503 WALLET_UNAVAILABLE and never sent; once they answered, the next bet is taken', async () => {
      const sessions = await Promise.all([0, 1, 2].map(() => launch('/launch/casino-b', { token: uniqueId('tok'), playerId: newPlayerId() })));
      const bets = sessions.map(() => uniqueId('bet'));
      simB.faults.latency('debit', 1000);
      const answers = await Promise.all(sessions.map((s, i) => call(KEYS.x, `/sessions/${encodeURIComponent(s.sessionId)}/bet`, { round_id: 'r', transaction_id: bets[i], amount: '1.00' })));
      expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 503]);
      const refused = answers.findIndex((a) => a.status === 503);
      expect(answers[refused]!.body).toMatchObject({ state: 'failed', error: { code: 'WALLET_UNAVAILABLE' } });
      // A held call is parsed only when it is answered: found by its body (all have answered by now).
      const debitsOf = (id: string) => simB.walletCalls().filter((c) => c.operation === 'debit' && c.rawBody.includes(`"${id}"`));
      expect(bets.map((id) => debitsOf(id).length)).toEqual(bets.map((_, i) => (i === refused ? 0 : 1)));
      expect((await request(gateway.url).get('/metrics')).text).toMatch(/^wallet_in_flight_refused_total\{call="debit",wallet="casino-b"\} 1$/m);
      simB.faults.latency('debit', 0);
      const next = await call(KEYS.x, `/sessions/${encodeURIComponent(sessions[refused]!.sessionId)}/bet`, { round_id: 'r2', transaction_id: uniqueId('bet'), amount: '1.00' });
      expect(next.status).toBe(200);
    });
  });

  describe('background work of wallet casino-b goes to casino-b', () => {
    let worker: RunningWorker;

    beforeAll(async () => {
      worker = await startWorker({ config: loadWorkerConfig(env), logger: createLogger({ level: 'debug', name: 'wallets-worker', destination: workerLogs.destination }), metrics: createMetrics({ defaultMetrics: false }) });
    });

    afterAll(async () => {
      await worker.close();
    });

    it('over casino-b\'s max_in_flight a retry waits without spending an attempt, and is sent once a slot is free', async () => {
      // The worker's share of casino-b's 2 is 1 (the gateway counts as the other process): one
      // retry held at casino-b for 1.5 s holds it.
      const first = await pendingWinAtB(1);
      simB.faults.delayNext('credit', 1, 1500, { transactionId: first.win });
      const held = await waitFor('the first win\'s retry at casino-b', () => callsOf(simB, 'credit', first.win)[1], 5_000);
      const playerId = newPlayerId();
      const second = await pendingWinAtB(1, { playerId });
      await waitFor('both wins credited', async () => {
        const states = await Promise.all([first.win, second.win].map(async (id) => ((await lookup(KEYS.x, id)).body as { state?: string }).state));
        return states.every((state) => state === 'succeeded');
      }, 20_000);
      const sent = callsOf(simB, 'credit', second.win);
      expect(sent.map((c) => c.code)).toEqual([Code.ClientError, Code.Success]);
      // Due 301 ms after its refusal, it went out only when the held retry answered.
      expect(sent[1]!.at).toBeGreaterThanOrEqual(held.at + 1500);
      const walletB = gateway.parts.wallets.get('casino-b')!;
      const record = await walletB.transactions.get(second.win, walletB.transactions.shardOf({ playerId, siteId: '7' }));
      expect(record).toMatchObject({ state: 'succeeded', attempts: 2, history: [Code.ClientError, Code.Success] });
      expect(await worker.metrics.registry.metrics()).toMatch(/^wallet_in_flight_refused_total\{call="retry",wallet="casino-b"\} [1-9]/m);
    });

    it('GET /admin/api/wallets counts the calls open at a wallet over the deployment: a retry the worker holds open at casino-b shows on the gateway', async () => {
      const { win } = await pendingWinAtB(1);
      // Within casino-b's deadline; the gateway itself has no call open there meanwhile.
      simB.faults.delayNext('credit', 1, TWO_WALLETS_TIMEOUT_MS - 100, { transactionId: win });
      const inFlight = async () => {
        const res = kept(await request(gateway.url).get('/admin/api/wallets').auth('ops', ADMIN_PASSWORD));
        return Object.fromEntries((res.body as { wallets: { id: string; in_flight: number }[] }).wallets.map((w) => [w.id, w.in_flight]));
      };
      await waitFor('the worker\'s call at casino-b counted', async () => (await inFlight())['casino-b'] === 1, TWO_WALLETS_TIMEOUT_MS);
      expect((await inFlight()).default).toBe(0);
      await waitFor('the win credited at casino-b', async () => ((await lookup(KEYS.x, win)).body as { state?: string }).state === 'succeeded', 20_000);
      await waitFor('no call open at casino-b', async () => (await inFlight())['casino-b'] === 0, 5_000);
    });

    it('a win casino-b did not take is retried at casino-b with its credentials, signature and provider id', async () => {
      // The same token and player in wallet default too.
      const token = uniqueId('tok');
      const playerId = newPlayerId();
      await launch('/launch', { token, playerId });
      const { win } = await pendingWinAtB(2, { key: KEYS.y2, token, playerId });
      await waitFor('the win credited at casino-b', async () => ((await lookup(KEYS.y2, win)).body as { state?: string }).state === 'succeeded', 20_000);
      const credits = callsOf(simB, 'credit', win);
      expect(credits).toHaveLength(3);
      expect(credits.every((c) => c.body?.provider_id === B.provider)).toBe(true);
      expect(callsOf(simA, 'credit', win)).toHaveLength(0);
      const lines = workerLogs.logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.transaction_id === win);
      expect(lines.length).toBeGreaterThan(0);
      expect(lines.every((line) => line.wallet === 'casino-b')).toBe(true);
    });

    it('a bet casino-b refused is compensated at casino-b', async () => {
      const b = await launch('/launch/casino-b', { token: uniqueId('tok'), playerId: newPlayerId() });
      const bet = uniqueId('bet');
      simB.faults.failNext('debit', 1, Code.ClientError, { transactionId: bet });
      const refused = await call(KEYS.x, `/sessions/${encodeURIComponent(b.sessionId)}/bet`, { round_id: 'r', transaction_id: bet, amount: '1.00' });
      expect(refused.body).toMatchObject({ state: 'failed' });
      await waitFor('the bet compensated at casino-b', async () => ((await lookup(KEYS.x, bet, 'casino-b')).body as { state?: string }).state === 'compensated', 20_000);
      expect(simB.walletCalls().filter((c) => c.operation === 'rollback' && c.body?.reference_transaction_id === bet).length).toBeGreaterThan(0);
      expect(callsOf(simB, 'status', bet)).toHaveLength(1);
      expect(simA.walletCalls().filter((c) => c.body?.reference_transaction_id === bet || c.transactionId === bet)).toEqual([]);
    });

    it('a dead win of casino-b is listed, looked up and redriven through the admin API with ?wallet=casino-b, and then credited at casino-b', async () => {
      // The first try and all ten retries refused: dead.
      const { win } = await pendingWinAtB(11);
      await waitFor('the win dead', async () => ((await lookup(KEYS.x, win)).body as { state?: string }).state === 'dead', 25_000);

      const admin = (path: string) => request(gateway.url).get(path).auth('ops', ADMIN_PASSWORD);
      const listed = kept(await admin('/admin/transactions?state=dead&wallet=casino-b'));
      expect((listed.body as { transactions: { transaction_id: string }[] }).transactions.map((t) => t.transaction_id)).toContain(win);
      expect((kept(await admin('/admin/transactions?state=dead')).body as { transactions: { transaction_id: string }[] }).transactions.map((t) => t.transaction_id)).not.toContain(win);
      expect(kept(await admin(`/admin/transactions/${win}`)).status).toBe(404);
      expect(kept(await admin(`/admin/transactions/${win}?wallet=casino-b`)).body).toMatchObject({ transaction_id: win, state: 'dead' });
      expect(kept(await admin(`/admin/transactions/${win}?wallet=casino-z`)).body).toMatchObject({ error: { code: 'WALLET_NOT_FOUND' } });
      const wallets = kept(await admin('/admin/api/wallets')).body as { wallets: { id: string; dead: number }[] };
      expect(wallets.wallets.find((w) => w.id === 'casino-b')!.dead).toBe(1);
      // The series read from Redis at a scrape name the wallet too.
      const scrape = (await request(gateway.url).get('/metrics')).text;
      expect(scrape).toMatch(/^transactions_dead\{wallet="casino-b"\} 1$/m);
      expect(scrape).toMatch(/^transactions_dead\{wallet="default"\} 0$/m);
      expect(scrape).toMatch(/^queue_jobs\{queue="wallet-retry",state="failed",wallet="casino-b"\} [1-9]/m);
      expect(scrape).toMatch(/^queue_jobs\{queue="wallet-retry",state="failed",wallet="default"\} 0$/m);

      const redriven = kept(await request(gateway.url).post(`/admin/transactions/${win}/redrive?wallet=casino-b`).auth('ops', ADMIN_PASSWORD));
      expect(redriven.status).toBe(202);
      await waitFor('the redriven win credited at casino-b', async () => ((await lookup(KEYS.x, win)).body as { state?: string }).state === 'succeeded', 20_000);
      expect(callsOf(simB, 'credit', win).at(-1)!.code).toBe(Code.Success);
      expect(callsOf(simA, 'credit', win)).toHaveLength(0);
    }, 60_000);

    it('a session of casino-b ended while its win is pending: the terminate waits, then goes to casino-b', async () => {
      const { sb, token, win } = await pendingWinAtB(1);
      expect((await call(KEYS.x, `/sessions/${sb}/end`)).status).toBeLessThan(300);
      await waitFor('the token terminated at casino-b', async () => callsOf(simB, 'terminate').some((c) => c.body?.token === token), 20_000);
      expect(callsOf(simA, 'terminate').filter((c) => c.body?.token === token)).toHaveLength(0);
      expect(callsOf(simB, 'credit', win).at(-1)!.code).toBe(Code.Success);
    });
  });

  describe('bulkheads: wallet default hangs every call while casino-b is healthy', () => {
    let worker: RunningWorker;

    beforeAll(async () => {
      // Two jobs at once over both wallets: with one shard each wallet's lane runs one. Were the
      // slots shared, default's hung calls (each holding a slot for the whole deadline) would keep
      // casino-b's retries waiting past their schedule.
      worker = await startWorker({
        config: loadWorkerConfig({ ...env, WORKER_CONCURRENCY: '2' }),
        logger: createLogger({ level: 'debug', name: 'lanes-worker', destination: workerLogs.destination }),
        metrics: createMetrics({ defaultMetrics: false }),
      });
    });

    afterAll(async () => {
      await worker.close();
    });

    const breakers = async () => {
      const res = kept(await request(gateway.url).get('/admin/api/wallets').auth('ops', ADMIN_PASSWORD));
      return Object.fromEntries((res.body as { wallets: { id: string; breaker: string }[] }).wallets.map((w) => [w.id, w.breaker]));
    };

    /**
     * Bets taken at wallet default while it was up, then `hang` applied to it, then a win of each:
     * every inline call runs into the deadline, so each win is answered 202 and left to the
     * worker's default lane, whose every send hangs too.
     */
    async function hungWinsAtDefault(count: number, hang: () => void) {
      const a = await launch('/launch', { token: uniqueId('tok'), playerId: newPlayerId() });
      const rounds = Array.from({ length: count }, (_, i) => ({ round: `r${i}`, bet: uniqueId('bet'), win: uniqueId('win') }));
      for (const r of rounds) expect((await call(KEYS.x, `/sessions/${a.sessionId}/bet`, { round_id: r.round, transaction_id: r.bet, amount: '1.00' })).status).toBe(200);
      hang();
      const wins = await Promise.all(rounds.map((r) => call(KEYS.x, `/sessions/${a.sessionId}/win`, { round_id: r.round, transaction_id: r.win, bet_transaction_id: r.bet, amount: '2.00' })));
      expect(wins.map((w) => w.status)).toEqual(rounds.map(() => 202));
      return { sessionId: a.sessionId, wins: rounds.map((r) => r.win) };
    }

    /**
     * casino-b's win refused with a retry code three times: its retries go out on the spec's
     * schedule delay(n), taken from the simulator's own receive times, while casino-b's bets in
     * another session answer 200. Returns when each retry reached casino-b.
     */
    async function healthyWalletKeepsSchedule(): Promise<number[]> {
      const { win } = await pendingWinAtB(3);
      const b = await launch('/launch/casino-b', { token: uniqueId('tok'), playerId: newPlayerId() });
      for (let i = 0; i < 3; i += 1) {
        expect((await call(KEYS.x, `/sessions/${encodeURIComponent(b.sessionId)}/bet`, { round_id: `r${i}`, transaction_id: uniqueId('bet'), amount: '1.00' })).status).toBe(200);
      }
      await waitFor('the win credited at casino-b', async () => ((await lookup(KEYS.x, win)).body as { state?: string }).state === 'succeeded', 20_000);
      const credits = callsOf(simB, 'credit', win);
      expect(credits.map((c) => c.code)).toEqual([Code.ClientError, Code.ClientError, Code.ClientError, Code.Success]);
      const at = credits.map((c) => c.at);
      [1, 2, 3].forEach((n) => {
        const gap = at[n]! - at[n - 1]!;
        // Never early; late by at most a job pick-up and a few Redis round trips (the worker-retry tolerance).
        expect(gap).toBeGreaterThanOrEqual(retryDelayMs(n, 'ms') - 2);
        expect(gap).toBeLessThan(retryDelayMs(n, 'ms') + 750);
      });
      return at.slice(1);
    }

    it('answering after the deadline, default\'s lane is kept busy with hung sends, and casino-b\'s retries still go out on schedule and its bets answer 200', async () => {
      const { wins } = await hungWinsAtDefault(8, () => simA.faults.latency('*', 20_000));
      const retries = await healthyWalletKeepsSchedule();

      // default's lane was full while casino-b retried: its one slot (all its wins are one player's,
      // so one shard's lane) held a worker send while casino-b's retries went out (each win's first
      // send was the gateway's inline call). Not at every retry: between one send giving up and the
      // next, default's jobs may all sit out their own retry delay. A held call is parsed only when
      // it is answered: found by its body.
      const sendsOf = (id: string) => simA.walletCalls().filter((c) => c.operation === 'credit' && c.rawBody.includes(`"${id}"`));
      const workerSends = wins.flatMap((id) => sendsOf(id).slice(1));
      expect(retries.filter((t) => workerSends.some((c) => c.at <= t && t < c.at + TWO_WALLETS_TIMEOUT_MS + 250)).length).toBeGreaterThan(0);
      // The health check still passes, and too few first attempts failed to open default's breaker:
      // the isolation shown here is the lanes', not the breaker's.
      expect(await breakers()).toEqual({ default: 'closed', 'casino-b': 'closed' });
    }, 60_000);

    it('never answering, default\'s breaker opens and holds back default alone: its bets are refused at once, casino-b\'s retries stay on schedule and its bets answer 200', async () => {
      const { sessionId } = await hungWinsAtDefault(4, () => simA.faults.down('hang'));
      await waitFor('the breaker of default open', async () => (await breakers()).default === 'open', 20_000);
      await healthyWalletKeepsSchedule();

      expect((await breakers())['casino-b']).toBe('closed');
      // One casino's wallet down keeps the gateway in the load balancer, and /readyz names it.
      const ready = await request(gateway.url).get('/readyz');
      expect(ready.status).toBe(200);
      expect(ready.body).toMatchObject({ status: 'ready', failed: [], checks: { redis: 'up', wallet: 'up' }, wallets: { default: 'open', 'casino-b': 'up' } });
      const refused = await call(KEYS.x, `/sessions/${sessionId}/bet`, { round_id: 'after', transaction_id: uniqueId('bet'), amount: '1.00' });
      expect(refused.status).toBe(503);
      expect(refused.body).toMatchObject({ error: { code: 'WALLET_UNAVAILABLE' } });
    }, 60_000);
  });

  describe('logs', () => {
    it('every line about a session or transaction, in the gateway and the worker, names its wallet', () => {
      const lines = [...gatewayLogs.logs, ...workerLogs.logs].map((line) => JSON.parse(line) as Record<string, unknown>);
      const subjects = ['session_id', 'transaction_id', 'bet_transaction_id', 'compensation_id', 'token_ref'];
      // A request line is about its session, the launch at a wallet of the registry, or a transaction
      // found (an unknown, foreign or ambiguous id is no one wallet's).
      const about = (line: Record<string, unknown>): boolean => {
        const path = (line.req as { path?: string } | undefined)?.path ?? '';
        const status = (line.res as { status?: number } | undefined)?.status ?? 0;
        return (
          subjects.some((field) => line[field] !== undefined && line[field] !== null) ||
          /^\/(launch(\/default|\/casino-b)?$|engine\/v1\/sessions\/)/.test(path) ||
          (path.startsWith('/engine/v1/transactions/') && status < 300)
        );
      };
      const aboutSubjects = lines.filter(about);
      expect(aboutSubjects.length).toBeGreaterThan(100);
      expect(aboutSubjects.filter((line) => !['default', 'casino-b'].includes(line.wallet as string)).map((line) => ({ msg: line.msg, name: line.name, component: line.component, path: (line.req as { path?: string } | undefined)?.path }))).toEqual([]);
    });
  });

  describe('secrets', () => {
    it('no secret, password, signing key or engine key is in any log line (gateway and worker) or answer', () => {
      const logs = [...gatewayLogs.logs, ...workerLogs.logs];
      expect(gatewayLogs.logs.length).toBeGreaterThan(0);
      expect(workerLogs.logs.length).toBeGreaterThan(0);
      expect(answers.length).toBeGreaterThan(0);
      for (const secret of SECRETS) {
        expect(logs.filter((line) => line.includes(secret))).toEqual([]);
        expect(answers.filter((text) => text.includes(secret))).toEqual([]);
      }
    });
  });
}
