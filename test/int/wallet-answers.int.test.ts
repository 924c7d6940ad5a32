/**
 * Hostile wallet answers through the real gateway (found by fuzzing the wallet's side): a success
 * about another player or token is no answer to the call (an unknown outcome: the bet is
 * compensated), and a refusal's text that echoes the token reaches neither the engine nor a log.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startHarness as startGatewayHarness, launch, engine, uniqueId, type Harness as GatewayHarness } from '../support/gateway-harness';

type Rule = (body: string, upstream: () => Promise<{ status: number; text: string }>, res: ServerResponse) => Promise<void> | void;

/** A wallet over real HTTP: forwards to the simulator unless a one-shot rule is armed for the operation. */
async function fakeWallet(): Promise<{ url: string; upstream: string; arm(op: string, rule: Rule): void; close(): Promise<void>; server: Server }> {
  const rules = new Map<string, Rule>();
  const self = {
    url: '',
    upstream: '',
    arm: (op: string, rule: Rule) => void rules.set(op, rule),
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
    server: undefined as unknown as Server,
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const upstream = async () => {
        const r = await fetch(self.upstream + req.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: String(req.headers.authorization ?? ''), 'x-request-signature': String(req.headers['x-request-signature'] ?? ''), host: new URL(self.upstream).host },
          body: body === '' ? undefined : body,
        });
        return { status: r.status, text: await r.text() };
      };
      const op = (req.url ?? '').split('/').pop() ?? '';
      const rule = rules.get(op);
      rules.delete(op);
      const run = rule ?? (async (_b, up, r) => { const u = await up(); r.writeHead(u.status, { 'content-type': 'application/json' }); r.end(u.text); });
      Promise.resolve(run(body, upstream, res)).catch(() => res.destroy());
    });
  });
  self.server = server;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  self.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return self;
}

/** Forwards (the simulator applies the call), then answers its success with `edit` applied. */
const edited = (edit: (text: string) => string): Rule => async (_body, upstream, res) => {
  const u = await upstream();
  res.writeHead(u.status, { 'content-type': 'application/json' });
  res.end(u.status === 200 ? edit(u.text) : u.text);
};

describe('wallet answers held against the request', () => {
  let h: GatewayHarness;
  let fake: Awaited<ReturnType<typeof fakeWallet>>;

  beforeAll(async () => {
    fake = await fakeWallet();
    h = await startGatewayHarness({ label: 'walletanswers', env: { WALLET_BASE_URL: fake.url, WALLET_TIMEOUT_MS: '1000', LOG_LEVEL: 'info' } });
    fake.upstream = h.sim.url;
  });
  afterAll(async () => {
    await h?.close();
    await fake?.close();
  });

  it('a debit success about another player and another token is not recorded as a bet taken', async () => {
    const { sessionId } = await launch(h);
    fake.arm('debit', edited((t) => t.replace(/"player_id":\d+/, '"player_id":1').replace(/"token":"[^"]*"/, '"token":"someone-else"')));
    const betId = uniqueId('bet');
    const res = await engine(h, `/sessions/${sessionId}/bet`, { round_id: uniqueId('r'), transaction_id: betId, amount: '10.00' });
    // The answer concerns another player: unknown outcome, 503, and the bet is compensated.
    expect(res.status).toBe(503);
    expect((await h.transactions.get(betId))?.state).toBe('compensating');
  });

  it('a refusal whose message and request_id echo the token does not put the token in the engine answer or a log line', async () => {
    const { sessionId, token } = await launch(h);
    fake.arm('balance', (body, _up, res) => {
      const tok = (JSON.parse(body) as { token: string }).token;
      res.writeHead(403, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: false, code: 30, message: `invalid token ${tok}`, request_id: tok }));
    });
    const start = h.logs.length;
    const res = await engine(h, `/sessions/${sessionId}/balance`);
    expect(res.status).toBe(403);
    // docs/engine-api.md: "The wallet token never leaves the gateway: not in an answer, not in a log line."
    expect(res.text).not.toContain(token);
    expect(h.logs.slice(start).filter((l) => l.includes(token))).toEqual([]);
  });
});
