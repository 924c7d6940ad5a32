import { randomUUID } from 'node:crypto';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createSecureServer } from 'node:http2';
import { connect as connectTcp, createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import type { WalletSettings } from '../../src/config/env';
import { startSimulator, type RunningSimulator } from '../../src/sim';
import { createWalletClient } from '../../src/wallet/client';
import { Code, walletHttpStatus } from '../../src/wallet/codes';
import { encodeRequest, type SessionFields, type WalletCallEvent, type WalletClient, type WalletOutcome } from '../../src/wallet/protocol';
import { hmacSigner } from '../../src/wallet/signer';
import { selfSignedCert } from '../../src/lib/self-signed-cert';
import { waitFor } from '../../src/lib/wait-for';
import { TRANSPORTS } from '../support/transports';

const USER = 'gateway-test';
const PASSWORD = 'test-password';
const SECRET = 'test-signing-secret';
const U64_MAX = '18446744073709551615';
const signer = hmacSigner(SECRET, 'sha256', 'hex');

function settingsFor(baseUrl: string, overrides: Partial<WalletSettings> = {}): WalletSettings {
  return {
    WALLET_BASE_URL: baseUrl,
    WALLET_BASIC_USER: USER,
    WALLET_BASIC_PASSWORD: PASSWORD,
    WALLET_SIGNING_SECRET: SECRET,
    WALLET_SIGNATURE_ALGO: 'sha256',
    WALLET_SIGNATURE_ENCODING: 'hex',
    WALLET_TIMEOUT_MS: 5000,
    WALLET_CONNECTIONS: 8,
    WALLET_HTTP2: true,
    WALLET_TLS_INSECURE: true,
    walletHostHeader: new URL(baseUrl).host,
    ...overrides,
  };
}

let playerSeq = 0;
/** A fresh token and player per test, so balances are predictable. */
function newSession(ids: Partial<Pick<SessionFields, 'player_id' | 'site_id' | 'provider_id'>> = {}): SessionFields {
  playerSeq += 1;
  return {
    token: randomUUID(),
    player_id: ids.player_id ?? String(9_000_000_000_000_000_000n + BigInt(playerSeq) * 1000n + BigInt(process.pid % 1000)),
    site_id: ids.site_id ?? '7',
    provider_id: ids.provider_id ?? '42',
    game_id: 'slot-1',
    currency: 'EUR',
  };
}

/** A transaction or round id unique to the session, within the spec's 36 characters. */
function tx(s: SessionFields, suffix: string): string {
  return `${s.token.slice(0, 24)}-${suffix}`;
}

function expectOk(outcome: WalletOutcome): Extract<WalletOutcome, { kind: 'ok' }> {
  if (outcome.kind !== 'ok') throw new Error(`expected ok, got ${JSON.stringify(outcome)}`);
  return outcome;
}

/** How many connections the calls the simulator recorded came on (the caller's address and port). */
function connectionsOf(sim: RunningSimulator): number {
  return new Set(sim.calls().map((c) => c.connection)).size;
}

/** Path and error code of every request undici errored in this process (its diagnostics channel). */
function watchRequestErrors(): { errors: { path: string; code: unknown }[]; stop(): void } {
  const errors: { path: string; code: unknown }[] = [];
  const listener = (message: unknown): void => {
    const { request, error } = message as { request: { path: string }; error: { code?: unknown } };
    errors.push({ path: request.path, code: error.code });
  };
  subscribe('undici:request:error', listener);
  return { errors, stop: () => unsubscribe('undici:request:error', listener) };
}

describe.each(TRANSPORTS)('wallet client against the simulator over $label', ({ tls }) => {
  let sim: RunningSimulator;
  let client: WalletClient;
  let events: WalletCallEvent[];
  const extraClients: WalletClient[] = [];

  function otherClient(overrides: Partial<WalletSettings>): WalletClient {
    const made = createWalletClient({ settings: settingsFor(sim.url, overrides), signer: hmacSigner(overrides.WALLET_SIGNING_SECRET ?? SECRET, 'sha256', 'hex') });
    extraClients.push(made);
    return made;
  }

  beforeAll(async () => {
    sim = await startSimulator({
      port: 0,
      basicUser: USER,
      basicPassword: PASSWORD,
      signingSecret: SECRET,
      startBalance: '1000.00',
      ...(tls ? { tls: selfSignedCert() } : {}),
    });
    client = createWalletClient({ settings: settingsFor(sim.url), signer, onCall: (e) => events.push(e) });
  });

  beforeEach(() => {
    events = [];
  });

  afterEach(() => {
    sim.faults.clear();
  });

  afterAll(async () => {
    await Promise.all([client.close(), ...extraClients.map((c) => c.close())]);
    await sim.close();
  });

  it('runs every operation end to end and reads exact balances', async () => {
    const s = newSession();
        expect(expectOk(await client.call('authenticate', s)).response.balance).toBe('1000.00');
    expect(expectOk(await client.call('balance', s)).response.balance).toBe('1000.00');

    const bet = { ...s, amount: '10.50', round_id: tx(s, 'round1'), transaction_id: tx(s, 'd1'), round_closed: false };
    expect(expectOk(await client.call('debit', bet)).response.balance).toBe('989.50');
    const win = { ...bet, amount: '25.00', transaction_id: tx(s, 'c1'), reference_transaction_id: bet.transaction_id, round_closed: true };
    expect(expectOk(await client.call('credit', win)).response.balance).toBe('1014.50');

    const bet2 = { ...bet, amount: '5.00', round_id: tx(s, 'round2'), transaction_id: tx(s, 'd2') };
    expect(expectOk(await client.call('debit', bet2)).response.balance).toBe('1009.50');
    const refund = { ...bet2, transaction_id: tx(s, 'r2'), reference_transaction_id: bet2.transaction_id, round_closed: true };
    expect(expectOk(await client.call('rollback', refund)).response.balance).toBe('1014.50');

    const status = { ...s, amount: win.amount, round_id: win.round_id, transaction_id: win.transaction_id, action: 'credit' as const };
    expectOk(await client.call('status', status));
    const ended = expectOk(await client.call('terminate', s));
    expect(ended.response).toMatchObject({ status: true, code: Code.Success, message: '', token: s.token, player_id: s.player_id, balance: '1014.50' });
    expect(sim.ledger.balanceOf(s.player_id)).toBe('1014.50');

    expect(events.map((e) => [e.operation, e.outcome, e.code, e.httpStatus])).toEqual(
      ['authenticate', 'balance', 'debit', 'credit', 'debit', 'rollback', 'status', 'terminate'].map((op) => [op, 'ok', Code.Success, 200]),
    );
    expect(events[2]?.transactionId).toBe(bet.transaction_id);
    expect(events[0]?.transactionId).toBeUndefined();
    for (const event of events) {
      expect(typeof event.walletRequestId).toBe('string');
      expect(event.latencyMs).toBeGreaterThan(0);
      // The event is for logs: no token, no credentials.
      expect(JSON.stringify(event)).not.toContain(s.token);
    }
  });

  it('send() posts stored bytes unchanged and reports their transaction id', async () => {
    const s = newSession();
    expectOk(await client.call('authenticate', s));
    const body = encodeRequest('debit', { ...s, amount: '1.00', round_id: tx(s, 'send-r1'), transaction_id: tx(s, 'send'), round_closed: false });
    expect(expectOk(await client.send('debit', body)).response.balance).toBe('999.00');
    expect(events[1]?.transactionId).toBe(tx(s, 'send'));
  });

  it("puts the caller's request id on the call event", async () => {
    const s = newSession();
    expectOk(await client.call('authenticate', s, { requestId: 'gw-req-1' }));
    const body = encodeRequest('debit', { ...s, amount: '1.00', round_id: tx(s, 'rid-r1'), transaction_id: tx(s, 'rid'), round_closed: false });
    expectOk(await client.send('debit', body, { requestId: 'gw-req-2' }));
    expectOk(await client.call('balance', s));
    expect(events.map((e) => e.requestId)).toEqual(['gw-req-1', 'gw-req-2', undefined]);
  });

  it('keeps ids up to 2^64-1 exact both ways', async () => {
    const s = newSession({ player_id: U64_MAX, site_id: U64_MAX, provider_id: U64_MAX });
    const ok = expectOk(await client.call('authenticate', s));
    expect(ok.response).toMatchObject({ player_id: U64_MAX, site_id: U64_MAX, provider_id: U64_MAX });
    expect(sim.ledger.balanceOf(U64_MAX)).toBe('1000.00');
  });

  it('maps an injected failure code to a rejection with the wallet status and request id', async () => {
    const s = newSession();
    expectOk(await client.call('authenticate', s));
    sim.faults.failNext('debit', 1, Code.InternalServiceError);
    const outcome = await client.call('debit', { ...s, amount: '1.00', round_id: tx(s, 'f-r1'), transaction_id: tx(s, 'f'), round_closed: false });
    expect(outcome).toMatchObject({ kind: 'rejected', code: Code.InternalServiceError, httpStatus: walletHttpStatus(Code.InternalServiceError) });
    expect(outcome.kind === 'rejected' && typeof outcome.walletRequestId).toBe('string');
    expect(events[1]).toMatchObject({ outcome: 'rejected', code: Code.InternalServiceError, detail: undefined });
    expect(sim.ledger.balanceOf(s.player_id)).toBe('1000.00');
  });

  it('cuts a hung answer at the deadline as unknown timeout, and the client goes on working', async () => {
    const fast = otherClient({ WALLET_TIMEOUT_MS: 300 });
    const s = newSession();
    expectOk(await fast.call('authenticate', s));
    sim.faults.applyThenDrop('debit', 1, { mode: 'hang' });
    const started = Date.now();
    const outcome = await fast.call('debit', { ...s, amount: '2.00', round_id: tx(s, 'h-r1'), transaction_id: tx(s, 'h'), round_closed: false });
    expect(outcome).toMatchObject({ kind: 'unknown', reason: 'timeout' });
    expect(Date.now() - started).toBeLessThan(3000);
    // The wallet applied it: exactly why the outcome is unknown rather than failed.
    expect(sim.ledger.balanceOf(s.player_id)).toBe('998.00');
    expectOk(await fast.call('balance', s));
  });

  it('frees the connection or stream of an unanswered call at the deadline', async () => {
    const failures = watchRequestErrors();
    try {
      const single = otherClient({ WALLET_CONNECTIONS: 1, WALLET_TIMEOUT_MS: 300 });
      const s = newSession();
      sim.clearCalls();
      expectOk(await single.call('authenticate', s));
      sim.faults.applyThenDrop('balance', 1, { mode: 'hang' });
      expect(await single.call('balance', s)).toMatchObject({ kind: 'unknown', reason: 'timeout', detail: 'no answer within 300 ms' });
      // HTTP/1.1: the deadline aborted the request inside undici (the headers-timeout backstop would
      // be UND_ERR_HEADERS_TIMEOUT). HTTP/2 goes through node:http2, which cancels the stream.
      expect(failures.errors).toEqual(tls ? [] : [{ path: '/api/wallet/balance', code: 'UND_ERR_ABORTED' }]);
      expectOk(await single.call('balance', s));
      // HTTP/2 resets the stream and keeps the session; an HTTP/1.1 connection left mid-exchange is closed.
      expect(connectionsOf(sim)).toBe(tls ? 1 : 2);
    } finally {
      failures.stop();
    }
  });

  it('maps a connection dropped after applying, and one reset before applying, to unknown connection', async () => {
    const s = newSession();
    expectOk(await client.call('authenticate', s));
    sim.faults.applyThenDrop('debit', 1, { mode: 'reset' });
    const dropped = await client.call('debit', { ...s, amount: '3.00', round_id: tx(s, 'x-r1'), transaction_id: tx(s, 'x1'), round_closed: false });
    expect(dropped).toMatchObject({ kind: 'unknown', reason: 'connection' });
    expect(sim.ledger.balanceOf(s.player_id)).toBe('997.00');

    sim.faults.reset('debit', 1);
    const reset = await client.call('debit', { ...s, amount: '3.00', round_id: tx(s, 'x-r2'), transaction_id: tx(s, 'x2'), round_closed: false });
    expect(reset).toMatchObject({ kind: 'unknown', reason: 'connection' });
    expect(sim.ledger.balanceOf(s.player_id)).toBe('997.00');
    expect(events.slice(1).map((e) => [e.outcome, e.code])).toEqual([
      ['unknown', null],
      ['unknown', null],
    ]);
    expectOk(await client.call('balance', s));
  });

  it('maps a non-JSON answer to unknown unparseable', async () => {
    const s = newSession();
    expectOk(await client.call('authenticate', s));
    sim.faults.nonJson('balance', 1);
    expect(await client.call('balance', s)).toMatchObject({ kind: 'unknown', reason: 'unparseable' });
    expect(events[1]).toMatchObject({ outcome: 'unknown', httpStatus: 200 });
  });

  it('is refused with 101 for wrong credentials and 102 for a wrong signature key', async () => {
    const s = newSession();
    expect(await otherClient({ WALLET_BASIC_PASSWORD: 'wrong' }).call('authenticate', s)).toMatchObject({
      kind: 'rejected',
      code: Code.InvalidCredentials,
      httpStatus: walletHttpStatus(Code.InvalidCredentials),
    });
    expect(await otherClient({ WALLET_SIGNING_SECRET: 'wrong' }).call('authenticate', s)).toMatchObject({
      kind: 'rejected',
      code: Code.InvalidSignature,
      httpStatus: walletHttpStatus(Code.InvalidSignature),
    });
  });

  it('health check: sends the Host header, 204 is healthy, 503 and a refused Host are not', async () => {
    sim.clearCalls();
    expect(await client.healthCheck()).toEqual({ healthy: true, detail: 'HTTP 204' });
    expect(events[0]).toMatchObject({ operation: 'health-check', outcome: 'ok', httpStatus: 204 });
    expect(sim.calls()).toEqual([expect.objectContaining({ operation: 'health-check', host: new URL(sim.url).host })]);

    sim.faults.unhealthy(true);
    expect(await client.healthCheck()).toEqual({ healthy: false, detail: 'HTTP 503' });
    sim.faults.unhealthy(false);

    const elsewhere = otherClient({ walletHostHeader: 'wallet.elsewhere.example' });
    expect(await elsewhere.healthCheck()).toEqual({ healthy: false, detail: 'HTTP 400' });
    expect(sim.calls().at(-1)?.host).toBe('wallet.elsewhere.example');
  });

  it(tls ? 'multiplexes calls over one HTTP/2 connection' : 'spreads concurrent calls over HTTP/1.1 keep-alive connections', async () => {
    const own = otherClient({});
    const s = newSession();
    expectOk(await own.call('authenticate', s));
    sim.clearCalls();
    const outcomes = await Promise.all(Array.from({ length: 20 }, () => own.call('balance', s)));
    outcomes.forEach(expectOk);
    expect(new Set(sim.calls().map((c) => c.httpVersion))).toEqual(new Set([tls ? '2.0' : '1.1']));
    if (tls) expect(connectionsOf(sim)).toBe(1);
    else expect(connectionsOf(sim)).toBeGreaterThan(1);
  });

  if (tls) {
    it.each([
      { http2: false, version: '1.1' },
      { http2: true, version: '2.0' },
    ])('with WALLET_HTTP2=$http2 the calls arrive as HTTP $version', async ({ http2, version }) => {
      const own = otherClient({ WALLET_HTTP2: http2 });
      const s = newSession();
      expectOk(await own.call('authenticate', s));
      sim.clearCalls();
      const outcomes = await Promise.all(Array.from({ length: 10 }, () => own.call('balance', s)));
      outcomes.forEach(expectOk);
      expect(sim.calls()).toHaveLength(10);
      expect(new Set(sim.calls().map((c) => c.httpVersion))).toEqual(new Set([version]));
      if (http2) expect(connectionsOf(sim)).toBe(1);
    });

    it('ends an HTTP/2 session whose wallet went silent (no PING answer after a deadline) and sends the next call on a new one', async () => {
      const proxy = await freezingProxy(Number(new URL(sim.url).port));
      try {
        const own = createWalletClient({ settings: settingsFor(proxy.url, { WALLET_TIMEOUT_MS: 300 }), signer });
        extraClients.push(own);
        const s = newSession();
        expectOk(await own.call('authenticate', s));
        // The connection stays open and carries nothing either way: no RST, no GOAWAY, no answer.
        proxy.freeze();
        expect(await own.call('balance', s)).toMatchObject({ kind: 'unknown', reason: 'timeout' });
        await waitFor('the silent session to be ended', () => proxy.closed() === 1, 5_000);
        expectOk(await own.call('balance', s));
        expect(proxy.opened()).toBe(2);
      } finally {
        await proxy.close();
      }
    });

    it('refuses the self-signed certificate unless WALLET_TLS_INSECURE', async () => {
      const strict = otherClient({ WALLET_TLS_INSECURE: false });
      const outcome = await strict.call('balance', newSession());
      expect(outcome).toMatchObject({ kind: 'unknown', reason: 'connection' });
      expect(outcome.kind === 'unknown' && outcome.detail).toMatch(/self[- ]signed/i);
      expect(sim.calls().filter((c) => c.operation === 'balance' && c.httpVersion === '2.0').length).toBeGreaterThan(0);
    });
  }
});

/**
 * A TCP relay to `port` whose `freeze()` stops every connection open then from carrying bytes
 * either way while keeping it open (a peer gone silent: no answer, no RST); connections made later
 * relay as usual.
 */
async function freezingProxy(port: number): Promise<{ url: string; freeze(): void; opened(): number; closed(): number; close(): Promise<void> }> {
  const pairs: { client: Socket; upstream: Socket }[] = [];
  let closed = 0;
  const server = createNetServer((client) => {
    const upstream = connectTcp(port, '127.0.0.1');
    client.pipe(upstream).pipe(client);
    client.on('error', () => undefined);
    upstream.on('error', () => undefined);
    client.once('close', () => {
      closed += 1;
      upstream.destroy();
    });
    pairs.push({ client, upstream });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    freeze() {
      for (const { client, upstream } of pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        upstream.pause();
        // Read and drop what the caller sends, so its close is still seen.
        client.resume();
      }
    },
    opened: () => pairs.length,
    closed: () => closed,
    async close() {
      for (const { client, upstream } of pairs) {
        client.destroy();
        upstream.destroy();
      }
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('wallet client against a scripted server (answers the simulator never gives)', () => {
  let server: Server;
  let baseUrl: string;
  let respond: (req: IncomingMessage, body: string, res: ServerResponse) => void;
  let client: WalletClient;
  let events: WalletCallEvent[];
  const s = newSession({ player_id: U64_MAX });

  const success = (extra: Record<string, unknown> = {}): string =>
    JSON.stringify({ status: true, code: 1, message: '', request_id: 'req-1', token: s.token, player_id: 0, game_id: 77, site_id: '7', provider_id: 42, balance: 0, ...extra })
      .replace('"player_id":0', `"player_id":${U64_MAX}`)
      .replace('"balance":0', '"balance":12.30');

  function answer(status: number, body: string): void {
    respond = (_req, _body, res) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(body);
    };
  }

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (body += chunk));
      req.on('end', () => respond(req, body, res));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/wallet-prefix`;
    client = createWalletClient({ settings: settingsFor(baseUrl, { WALLET_TIMEOUT_MS: 400 }), signer, onCall: (e) => events.push(e) });
  });

  beforeEach(() => {
    events = [];
  });

  afterAll(async () => {
    await client.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('joins the base path, sends the protocol headers and signs the exact body', async () => {
    let seen: { url: string | undefined; headers: IncomingMessage['headers']; body: string } | undefined;
    respond = (req, body, res) => {
      seen = { url: req.url, headers: req.headers, body };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(success());
    };
    const ok = expectOk(await client.call('balance', s));
    expect(ok.response).toMatchObject({ player_id: U64_MAX, game_id: '77', site_id: '7', provider_id: '42', balance: '12.30' });
    expect(seen?.url).toBe('/wallet-prefix/api/wallet/balance');
    expect(seen?.body).toBe(encodeRequest('balance', s));
    expect(seen?.body).toContain(`"player_id":${U64_MAX}`);
    expect(seen?.headers).toMatchObject({
      'content-type': 'application/json',
      accept: 'application/json',
      authorization: `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`,
      'x-request-signature': signer.sign(seen?.body ?? ''),
    });
  });

  it('sends the configured Host on the health check and wants 204 exactly', async () => {
    const hostClient = createWalletClient({ settings: settingsFor(baseUrl, { walletHostHeader: 'wallet.example:8443' }), signer });
    try {
      let host: string | undefined;
      let url: string | undefined;
      respond = (req, _body, res) => {
        host = req.headers.host;
        url = req.url;
        res.writeHead(200);
        res.end();
      };
      expect(await hostClient.healthCheck()).toEqual({ healthy: false, detail: 'HTTP 200' });
      expect(host).toBe('wallet.example:8443');
      expect(url).toBe('/wallet-prefix/api/health-check');
    } finally {
      await hostClient.close();
    }
  });

  it('takes a failure body as a rejection whatever the status, and notes a status that disagrees', async () => {
    answer(200, '{"status":false,"code":34,"message":"not found","request_id":"req-2"}');
    expect(await client.call('balance', s)).toMatchObject({ kind: 'rejected', code: 34, httpStatus: 200, message: 'not found', walletRequestId: 'req-2' });
    expect(events[0]?.detail).toBe('failure code 34 on HTTP 200 (the code maps to 422)');

    answer(422, '{"status":false,"code":34,"message":"not found"}');
    expect(await client.call('balance', s)).toMatchObject({ kind: 'rejected', code: 34, httpStatus: 422, walletRequestId: undefined });
    expect(events[1]?.detail).toBeUndefined();
  });

  it.each([
    ['a success body on an error status', 'inconsistent', 500, success()],
    ['status true with a failure code', 'inconsistent', 200, success({ code: 12 })],
    ['status false with the success code', 'inconsistent', 500, '{"status":false,"code":1,"message":"?"}'],
    ['a success body missing balance', 'schema', 200, success().replace(',"balance":12.30', '')],
    ['a failure body with a code that is no number', 'schema', 500, '{"status":false,"code":"twelve","message":"x"}'],
    ['JSON without status', 'schema', 200, '[1,2]'],
    ['an empty body', 'unparseable', 204, ''],
    ['HTML', 'unparseable', 502, '<html>bad gateway</html>'],
  ])('maps %s to unknown %s', async (_name, reason, status, body) => {
    answer(status as number, body as string);
    expect(await client.call('balance', s)).toMatchObject({ kind: 'unknown', reason });
    expect(events[0]).toMatchObject({ outcome: 'unknown', code: null, httpStatus: status });
  });

  it.each([
    { label: 'HTTP/2', http2: true },
    { label: 'HTTP/1.1 over TLS', http2: false },
  ])('maps an answer over the size limit to unknown unparseable over $label', async ({ http2 }) => {
    let body = `{"status":true,"message":"${'x'.repeat(1024 * 1024)}"}`;
    const tlsServer = createSecureServer({ ...selfSignedCert(), allowHTTP1: true }, (req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(body);
      });
    });
    await new Promise<void>((resolve) => tlsServer.listen(0, '127.0.0.1', resolve));
    const seen: WalletCallEvent[] = [];
    const tlsClient = createWalletClient({
      settings: settingsFor(`https://127.0.0.1:${(tlsServer.address() as AddressInfo).port}`, { WALLET_HTTP2: http2 }),
      signer,
      onCall: (e) => seen.push(e),
    });
    try {
      expect(await tlsClient.call('balance', s)).toMatchObject({ kind: 'unknown', reason: 'unparseable' });
      expect(seen[0]).toMatchObject({ outcome: 'unknown', httpStatus: 200, detail: expect.stringContaining('UND_ERR_RES_EXCEEDED_MAX_SIZE') });
      body = success();
      expectOk(await tlsClient.call('balance', s));
    } finally {
      await tlsClient.close();
      await new Promise((resolve) => tlsServer.close(resolve));
    }
  });

  it('with WALLET_HTTP2=true, talks HTTP/1.1 to a TLS wallet that offers no h2, from the first call on', async () => {
    const versions: string[] = [];
    const https = createHttpsServer({ ...selfSignedCert(), ALPNProtocols: ['http/1.1'] }, (req, res) => {
      versions.push(req.httpVersion);
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(success());
      });
    });
    await new Promise<void>((resolve) => https.listen(0, '127.0.0.1', resolve));
    const h1Client = createWalletClient({ settings: settingsFor(`https://127.0.0.1:${(https.address() as AddressInfo).port}`, { WALLET_HTTP2: true }), signer });
    try {
      const outcomes = await Promise.all(Array.from({ length: 5 }, () => h1Client.call('balance', s)));
      outcomes.forEach(expectOk);
      expectOk(await h1Client.call('balance', s));
      expect(versions).toEqual(Array.from({ length: 6 }, () => '1.1'));
    } finally {
      await h1Client.close();
      https.closeAllConnections();
      await new Promise((resolve) => https.close(resolve));
    }
  });

  it('cuts a body that stalls after the headers at the deadline and drops that connection', async () => {
    let stalled: IncomingMessage['socket'] | undefined;
    respond = (req, _body, res) => {
      stalled = req.socket;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"status":true,');
    };
    expect(await client.call('balance', s)).toMatchObject({ kind: 'unknown', reason: 'timeout' });
    // A connection with half an answer on it can never be reused: the client must close it.
    const deadline = Date.now() + 2000;
    while (stalled?.destroyed !== true && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(stalled?.destroyed).toBe(true);
  });

  it('maps a refused connection to unknown connection', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const nowhere = createWalletClient({ settings: settingsFor(`http://127.0.0.1:${port}`), signer });
    try {
      expect(await nowhere.call('balance', s)).toMatchObject({ kind: 'unknown', reason: 'connection' });
      expect(await nowhere.healthCheck()).toMatchObject({ healthy: false });
    } finally {
      await nowhere.close();
    }
  });

  it('keeps a throwing onCall away from the caller', async () => {
    const noisy = createWalletClient({
      settings: settingsFor(baseUrl),
      signer,
      onCall: () => {
        throw new Error('metrics broke');
      },
    });
    try {
      answer(200, success());
      expectOk(await noisy.call('balance', s));
    } finally {
      await noisy.close();
    }
  });
});
