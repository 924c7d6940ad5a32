import { randomBytes, randomUUID } from 'node:crypto';
import type { Child } from '../../src/lib/child';
import { waitFor } from '../../src/lib/wait-for';
import { Code } from '../../src/wallet/codes';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver';
import { freePort } from '../../src/lib/free-port';
import { spawnEntry, startWorkerProcess } from '../support/processes';
import { TRANSPORTS } from '../support/transports';
import { WALLET_PASSWORD, WALLET_SECRET, WALLET_USER, callsFor, startHarness, type Harness, type Player } from '../support/worker-harness';

/**
 * Contract 13 end to end: an in-process OTLP/HTTP receiver (http/json), a real gateway process and
 * a real worker process exporting to it with tracing on, the real simulator over HTTP/1.1 and
 * HTTP/2, real Redis. (The harness's own in-process gateway only opens sessions and stays untraced:
 * the OTLP exporter loads node:http with a dynamic import, which jest's module sandbox refuses.)
 */
const ENGINE_KEY = 'trace-test-engine-key';
/** OTLP span kinds as exported. */
const KIND = { server: 2, client: 3, consumer: 5 } as const;

const hex = (bytes: number): string => randomBytes(bytes).toString('hex');

interface EngineCall {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

describe.each(TRANSPORTS)('traces over $label to the wallet', ({ tls }) => {
  let receiver: OtlpReceiver;
  let h: Harness;
  let gateway: Child;
  let gatewayUrl: string;
  let worker: Child;
  let player: Player;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    h = await startHarness({ label: 'trace', tls });
    const traced = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' };
    const port = await freePort();
    gateway = await spawnEntry('src/main/gateway.ts', { ...h.env, ...traced, OTEL_BSP_SCHEDULE_DELAY: '50', PORT: String(port), ENGINE_API_KEY: ENGINE_KEY, GATEWAY_PROCESSES: '1', LOG_LEVEL: 'info' });
    await gateway.waitForOutput('gateway listening');
    gatewayUrl = `http://127.0.0.1:${port}`;
    // Its spans leave only at its shutdown (a batch delay far beyond the test): what arrives proves the flush.
    worker = await startWorkerProcess({ ...h.env, ...traced, OTEL_BSP_SCHEDULE_DELAY: '600000', DEAD_CHECK_INTERVAL_MS: '500' });
    player = await h.newPlayer();
  });

  afterAll(async () => {
    await worker?.stop();
    await gateway?.stop();
    await h?.close();
    await receiver?.close();
  });

  async function engineCall(action: 'bet' | 'win', headers: Record<string, string>, body: string): Promise<EngineCall> {
    const res = await fetch(`${gatewayUrl}/engine/v1/sessions/${player.session.sessionId}/${action}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ENGINE_KEY}`, 'content-type': 'application/json', ...headers },
      body,
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  const inTrace = (traceId: string): ReceivedSpan[] => receiver.spans().filter((s) => s.traceId === traceId);
  const walletSpans = (traceId: string, op: string): ReceivedSpan[] => inTrace(traceId).filter((s) => s.kind === KIND.client && s.attributes['wallet.operation'] === op);

  /** The trace id of a traceparent. */
  const traceOf = (traceparent: string | undefined): string | undefined => traceparent?.split('-')[1];

  it("a refused bet's compensation, a dead win's dead-check and a session's terminate reach the wallet in the trace of the request behind them", async () => {
    const [betTrace, winTrace, endTrace] = [hex(16), hex(16), hex(16)];
    const header = (traceId: string): Record<string, string> => ({ traceparent: `00-${traceId}-${hex(8)}-01` });

    // A bet the wallet answers 12 inline: refused to the engine, rolled back by the worker.
    const refusedId = `b-${randomUUID().slice(0, 30)}`;
    h.sim.faults.failNext('debit', 1, Code.InternalServiceError, { transactionId: refusedId });
    const refused = await engineCall('bet', header(betTrace), `{"round_id":"r-${randomUUID().slice(0, 20)}","transaction_id":"${refusedId}","amount":3.00}`);
    expect(refused.body.state).toBe('failed');
    const compensation = await waitFor('the compensation at the wallet', () => h.sim.calls().find((c) => c.operation === 'rollback' && c.body?.reference_transaction_id === refusedId), 15_000);
    expect(traceOf(compensation.traceparent)).toBe(betTrace);

    // A win the wallet never finds (34, four tries): dead; the dead-check then asks wallet status.
    const roundId = `r-${randomUUID().slice(0, 20)}`;
    const betId = `b-${randomUUID().slice(0, 30)}`;
    const winId = `w-${randomUUID().slice(0, 30)}`;
    expect((await engineCall('bet', {}, `{"round_id":"${roundId}","transaction_id":"${betId}","amount":2.00}`)).status).toBe(200);
    h.sim.faults.failNext('credit', 50, Code.TransactionNotFound, { transactionId: winId });
    await engineCall('win', header(winTrace), `{"round_id":"${roundId}","transaction_id":"${winId}","bet_transaction_id":"${betId}","amount":4.00,"round_closed":true}`);
    await h.inState(winId, 'dead');
    const asked = await waitFor('the dead-check at the wallet', () => callsFor(h.sim, winId, 'status')[0], 15_000);
    expect(callsFor(h.sim, winId, 'credit').map((c) => traceOf(c.traceparent))).toEqual([winTrace, winTrace, winTrace, winTrace]);
    expect(traceOf(asked.traceparent)).toBe(winTrace);

    // Another player's session ended: its token's terminate.
    const other = await h.newPlayer();
    const ended = await fetch(`${gatewayUrl}/engine/v1/sessions/${other.session.sessionId}/end`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ENGINE_KEY}`, 'content-type': 'application/json', ...header(endTrace) },
      body: '{}',
    });
    expect(ended.status).toBe(200);
    const terminate = await waitFor('the terminate at the wallet', () => h.sim.calls().find((c) => c.operation === 'terminate' && c.body?.token === other.fields.token), 15_000);
    expect(traceOf(terminate.traceparent)).toBe(endTrace);
  });

  it('an engine bet and a win retried once by the worker are both in the engine trace, and the wallet got its traceparent on every call', async () => {
    const traceId = hex(16);
    const tracestate = 'engine=round7';
    const betParent = hex(8);
    const winParent = hex(8);
    const roundId = `r-${randomUUID().slice(0, 20)}`;
    const betId = `b-${randomUUID().slice(0, 30)}`;
    const winId = `w-${randomUUID().slice(0, 30)}`;

    const bet = await engineCall(
      'bet',
      { traceparent: `00-${traceId}-${betParent}-01`, tracestate, 'x-request-id': `bet-${betId}` },
      `{"round_id":"${roundId}","transaction_id":"${betId}","amount":10.00}`,
    );
    expect(bet).toMatchObject({ status: 200, body: { state: 'succeeded' } });

    h.sim.faults.failNext('credit', 1, Code.InternalServiceError, { transactionId: winId });
    const win = await engineCall(
      'win',
      { traceparent: `00-${traceId}-${winParent}-01`, tracestate, 'x-request-id': `win-${winId}` },
      `{"round_id":"${roundId}","transaction_id":"${winId}","bet_transaction_id":"${betId}","amount":25.00,"round_closed":true}`,
    );
    expect(win).toMatchObject({ status: 202, body: { state: 'pending' } });
    await h.inState(winId, 'succeeded');

    // The wallet: one debit inline, the credit inline and once from the worker, each with the
    // engine's trace id, a span id of its own and the engine's tracestate.
    const calls = [...callsFor(h.sim, betId), ...callsFor(h.sim, winId)];
    expect(calls.map((c) => c.operation)).toEqual(['debit', 'credit', 'credit']);
    for (const call of calls) {
      expect(call.httpVersion).toBe(tls ? '2.0' : '1.1');
      expect(call.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
      expect(call.tracestate).toBe(tracestate);
    }

    // The gateway's spans arrive within its batch delay; the worker's once it has shut down.
    await worker.stop();
    const spans = await waitFor('every span of the trace', () => {
      const got = inTrace(traceId);
      return walletSpans(traceId, 'credit').length === 2 && got.some((s) => s.kind === KIND.consumer) ? got : undefined;
    }, 10_000);

    // The engine's requests are server spans continuing its spans.
    const servers = spans.filter((s) => s.kind === KIND.server);
    expect(servers.map((s) => [s.name, s.parentSpanId, s.attributes['engine.request_id'], s.attributes['http.response.status_code']]).sort()).toEqual([
      ['POST /engine/v1/sessions/:sessionId/bet', betParent, `bet-${betId}`, 200],
      ['POST /engine/v1/sessions/:sessionId/win', winParent, `win-${winId}`, 202],
    ]);
    const [betServer, winServer] = ['bet', 'win'].map((a) => servers.find((s) => s.name.endsWith(a))!);

    // Each wallet call is the client span whose id went out in its traceparent.
    const spanIdOf = (traceparent: string | undefined): string => traceparent!.split('-')[2]!;
    const [debitCall, inlineCall, retryCall] = calls;
    const [debit] = walletSpans(traceId, 'debit');
    const inline = walletSpans(traceId, 'credit').find((s) => s.service === 'wallet-gateway')!;
    const retried = walletSpans(traceId, 'credit').find((s) => s.service === 'wallet-gateway-worker')!;
    expect([debit!.spanId, inline.spanId, retried.spanId]).toEqual([debitCall, inlineCall, retryCall].map((c) => spanIdOf(c!.traceparent)));

    expect(debit!.attributes).toMatchObject({ 'wallet.name': 'default', 'wallet.operation': 'debit', 'wallet.transaction_id': betId, 'wallet.attempt': 1, 'wallet.code': Code.Success, 'engine.request_id': `bet-${betId}` });
    expect(debit!.attributes['wallet.request_id']).toEqual(expect.any(String));
    expect(inline.attributes).toMatchObject({ 'wallet.transaction_id': winId, 'wallet.attempt': 1, 'wallet.code': Code.InternalServiceError, 'engine.request_id': `win-${winId}` });
    expect(retried.attributes).toMatchObject({ 'wallet.name': 'default', 'wallet.operation': 'credit', 'wallet.transaction_id': winId, 'wallet.attempt': 2, 'wallet.code': Code.Success });

    // The worker's run is a consumer span under the win's request (the job carried its context),
    // and the retried call is its child.
    const run = spans.find((s) => s.kind === KIND.consumer && s.spanId === retried.parentSpanId);
    expect(run).toMatchObject({ service: 'wallet-gateway-worker', name: 'wallet-retry retry', attributes: { 'wallet.transaction_id': winId } });
    const ancestors = (span: ReceivedSpan): string[] => {
      const parent = spans.find((s) => s.spanId === span.parentSpanId);
      return parent === undefined ? [] : [parent.spanId, ...ancestors(parent)];
    };
    expect(ancestors(run!)).toContain(winServer!.spanId);
    expect(ancestors(debit!)).toContain(betServer!.spanId);

    // The Redis steps are spans, with no arguments.
    const claims = spans.filter((s) => s.name === 'redis claim');
    expect(claims.length).toBeGreaterThanOrEqual(2);
    for (const claim of claims) expect(claim.attributes).toEqual({});
    expect(spans.some((s) => s.name === 'redis settle' && s.service === 'wallet-gateway-worker')).toBe(true);

    // The worker's log lines inside the run name the trace and the span they were written in.
    const settledLine = worker
      .stdout()
      .split('\n')
      .filter((line) => line.includes('"wallet call settled"') && line.includes(winId))
      .map((line) => JSON.parse(line) as { trace_id?: string; span_id?: string })[0];
    expect(settledLine?.trace_id).toBe(traceId);
    expect(spans.map((s) => s.spanId)).toContain(settledLine?.span_id);

    // The gateway's lines of the win: the request's line in its server span, the wallet call's in
    // the client span of the inline try.
    type Line = { msg?: string; request_id?: string; requestId?: string; trace_id?: string; span_id?: string };
    const gatewayLines = (): Line[] =>
      gateway
        .stdout()
        .split('\n')
        .filter((line) => line.includes(`win-${winId}`))
        .map((line) => JSON.parse(line) as Line);
    const requestLine = await waitFor('the win request line', () => gatewayLines().find((l) => l.msg === 'request completed'), 10_000);
    expect(requestLine).toMatchObject({ trace_id: traceId, span_id: winServer!.spanId });
    expect(gatewayLines().find((l) => l.msg === 'wallet call')).toMatchObject({ trace_id: traceId, span_id: inline.spanId });

    // No token, secret, signature or Authorization in anything exported.
    const exported = receiver.bodies().join('\n').toLowerCase();
    const basic = Buffer.from(`${WALLET_USER}:${WALLET_PASSWORD}`).toString('base64').toLowerCase();
    for (const secret of [player.fields.token, WALLET_PASSWORD, WALLET_SECRET, basic, ENGINE_KEY, 'authorization', 'x-request-signature']) {
      expect(exported).not.toContain(secret.toLowerCase());
    }
  });

  it('an engine request without a traceparent starts a new trace, which the wallet receives', async () => {
    const betId = `b-${randomUUID().slice(0, 30)}`;
    const bet = await engineCall('bet', {}, `{"round_id":"r-${randomUUID().slice(0, 20)}","transaction_id":"${betId}","amount":1.00}`);
    expect(bet.status).toBe(200);
    const [call] = callsFor(h.sim, betId);
    const [, traceId, spanId] = call!.traceparent!.split('-');
    const server = await waitFor('the bet request span', () => inTrace(traceId!).find((s) => s.kind === KIND.server), 10_000);
    expect(server.parentSpanId).toBeUndefined();
    expect(walletSpans(traceId!, 'debit').map((s) => s.spanId)).toEqual([spanId]);
    expect(call!.tracestate).toBeUndefined();
  });
});

describe('traces exported as http/protobuf (the default protocol)', () => {
  let receiver: OtlpReceiver;
  let h: Harness;
  let gateway: Child;
  let gatewayUrl: string;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    h = await startHarness({ label: 'trace-pb' });
    const port = await freePort();
    gateway = await spawnEntry('src/main/gateway.ts', {
      ...h.env,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_BSP_SCHEDULE_DELAY: '50',
      PORT: String(port),
      ENGINE_API_KEY: ENGINE_KEY,
      GATEWAY_PROCESSES: '1',
      LOG_LEVEL: 'info',
    });
    await gateway.waitForOutput('gateway listening');
    gatewayUrl = `http://127.0.0.1:${port}`;
  });

  afterAll(async () => {
    await gateway?.stop();
    await h?.close();
    await receiver?.close();
  });

  it("a bet's spans reach the collector as protobuf, in the engine's trace, with no token in them", async () => {
    const player = await h.newPlayer();
    const traceId = hex(16);
    const betId = `b-${randomUUID().slice(0, 30)}`;
    const res = await fetch(`${gatewayUrl}/engine/v1/sessions/${player.session.sessionId}/bet`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ENGINE_KEY}`, 'content-type': 'application/json', traceparent: `00-${traceId}-${hex(8)}-01` },
      body: `{"round_id":"r-${randomUUID().slice(0, 20)}","transaction_id":"${betId}","amount":1.00}`,
    });
    expect(res.status).toBe(200);
    const [call] = callsFor(h.sim, betId);
    expect(call?.traceparent?.split('-')[1]).toBe(traceId);
    const exported = await waitFor('the bet in a protobuf export', () => {
      const all = Buffer.concat(receiver.protobufBodies());
      return all.includes(Buffer.from(betId)) ? all : undefined;
    }, 10_000);
    expect(receiver.bodies()).toEqual([]);
    expect(exported.includes(Buffer.from(traceId, 'hex'))).toBe(true);
    expect(exported.includes(Buffer.from('wallet debit'))).toBe(true);
    for (const secret of [player.fields.token, WALLET_PASSWORD, WALLET_SECRET, ENGINE_KEY]) expect(exported.includes(Buffer.from(secret))).toBe(false);
  });
});
