import { loadGatewayConfig, loadWorkerConfig } from '../../src/config/env';
import { stringifyJson, jsonNumber } from '../../src/lib/json';
import { startGateway, type RunningGateway } from '../../src/main/gateway';
import { createLogger } from '../../src/observability/logger';
import { startSimulator, type RunningSimulator } from '../../src/sim';
import type { RecordView } from '../../src/soak/checker';
import { EngineClient } from '../../src/soak/engine-client';
import type { Reply } from '../../src/soak/history';
import { Code } from '../../src/wallet/codes';
import { startWorker, type RunningWorker } from '../../workers/worker';
import { deletePrefix, redisUrl, testPrefix } from '../support/prefix';

/**
 * Money paths through the real gateway and a real worker: the defects the demo and the soak found
 * (docs/reliability.md), each reduced to its shortest sequence, and the wallet applying a call whose
 * answer is then lost — each asserting what the wallet's ledger actually applied.
 */
const KEY = 'regression-engine-key';
const SECRET = { user: 'gw', password: 'gw-password', signing: 'gw-signing' };
const FINAL = new Set(['succeeded', 'failed', 'compensated', 'dead']);

let sim: RunningSimulator;
let gateway: RunningGateway;
let worker: RunningWorker | undefined;
let client: EngineClient;
let prefix: string;
let env: Record<string, string>;
let seq = 0;

beforeEach(async () => {
  prefix = testPrefix('soakreg');
  sim = await startSimulator({ basicUser: SECRET.user, basicPassword: SECRET.password, signingSecret: SECRET.signing });
  env = {
    REDIS_URL: redisUrl(),
    QUEUE_PREFIX: prefix,
    WALLET_BASE_URL: sim.url,
    WALLET_BASIC_USER: SECRET.user,
    WALLET_BASIC_PASSWORD: SECRET.password,
    WALLET_SIGNING_SECRET: SECRET.signing,
    WALLET_TIMEOUT_MS: '1000',
    PROVIDER_ID: '42',
    ENGINE_API_KEY: KEY,
    PORT: '0',
    RETRY_DELAY_UNIT: 'ms',
    SWEEP_INTERVAL_MS: '60000',
    LOG_LEVEL: 'silent',
  };
  gateway = await startGateway(loadGatewayConfig(env), createLogger({ level: 'silent', name: 'regression-gateway' }), { host: '127.0.0.1' });
  client = new EngineClient({ gateways: [gateway.url], apiKey: KEY, adminUser: 'a', adminPassword: 'b', answerTimeoutMs: 10_000, resendDeadlineMs: 10_000 });
});

afterEach(async () => {
  await worker?.close();
  worker = undefined;
  await client.close();
  await gateway.close();
  await sim.close();
  await deletePrefix(prefix);
});

async function runWorker(): Promise<void> {
  const config = loadWorkerConfig(env);
  worker = await startWorker({ config, logger: createLogger({ level: 'silent', name: 'regression-worker' }) });
}

async function launch(token: string, player: string): Promise<string> {
  const launched = await client.launch({ token, player_id: player, site_id: '7', currency: 'EUR', game_id: 'slots' }, 0);
  if (!launched.ok) throw new Error(`launch failed: ${launched.detail}`);
  return launched.sessionId;
}

async function post(session: string, route: 'bet' | 'win' | 'end', fields: Record<string, unknown>): Promise<Reply> {
  const body = stringifyJson('amount' in fields ? { ...fields, amount: jsonNumber(String(fields.amount)) } : fields);
  return (await client.send(`/engine/v1/sessions/${session}/${route}`, body, [], 0)).reply;
}

async function finalRecord(id: string): Promise<RecordView> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const view = await client.record(id, 0);
    if (view && FINAL.has(view.state)) return view;
    if (Date.now() > deadline) throw new Error(`${id} not final: ${JSON.stringify(view)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function ids(): { player: string; token: string; round: string } {
  seq += 1;
  return { player: String(18446744073709551615n - BigInt(seq)), token: `tok-${prefix}-${seq}`, round: `r-${seq}` };
}

const status = (reply: Reply): number | string => (reply.kind === 'answer' ? reply.status : reply.reason);

describe('found by the soak', () => {
  // Ending the relaunched session terminates the wallet token the earlier session's retry still needs.
  it('a win answered 202 in a session is credited even after a relaunch (same token) is ended', async () => {
    const { player, token, round } = ids();
    const first = await launch(token, player);
    expect(status(await post(first, 'bet', { round_id: round, transaction_id: `${round}-b`, amount: '1.00' }))).toBe(200);
    sim.faults.failNext('credit', 1, Code.UserOffline, { transactionId: `${round}-w` });
    expect(status(await post(first, 'win', { round_id: round, transaction_id: `${round}-w`, bet_transaction_id: `${round}-b`, amount: '2.00' }))).toBe(202);

    const second = await launch(token, player);
    // The token's pending win holds the terminate back: end answers pending (contract 5.6).
    expect(status(await post(second, 'end', {}))).toBe(202);
    await runWorker();

    await finalRecord(`${round}-w`);
    expect(sim.ledger.appliedCount(`${round}-w`)).toBe(1);
    const deadline = Date.now() + 10_000;
    while (!sim.calls().some((c) => c.operation === 'terminate' && c.code === Code.Success) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    const ops = sim.calls().filter((c) => c.code === Code.Success).map((c) => c.operation);
    expect(ops.lastIndexOf('terminate')).toBeGreaterThan(ops.lastIndexOf('credit'));
  });

  // A closing call is accepted while an earlier credit of the round is still being retried.
  it('a win answered 202 is credited even when a later win of the same round closes it', async () => {
    const { player, token, round } = ids();
    const session = await launch(token, player);
    expect(status(await post(session, 'bet', { round_id: round, transaction_id: `${round}-b`, amount: '1.00' }))).toBe(200);
    sim.faults.failNext('credit', 1, Code.UserOffline, { transactionId: `${round}-w1` });
    const w1 = { round_id: round, transaction_id: `${round}-w1`, bet_transaction_id: `${round}-b`, amount: '2.00', round_closed: false };
    expect(status(await post(session, 'win', w1))).toBe(202);
    const w2 = { round_id: round, transaction_id: `${round}-w2`, bet_transaction_id: `${round}-b`, amount: '0.00', round_closed: true };
    // Held behind w1 (it would close the round under w1's retries): pending, no wallet call yet.
    expect(status(await post(session, 'win', w2))).toBe(202);
    expect(sim.calls().some((c) => c.transactionId === `${round}-w2`)).toBe(false);
    await runWorker();

    await finalRecord(`${round}-w1`);
    expect((await finalRecord(`${round}-w2`)).state).toBe('succeeded');
    expect(sim.ledger.appliedCount(`${round}-w1`)).toBe(1);
    expect(sim.ledger.appliedCount(`${round}-w2`)).toBe(1);
    const applied = sim.calls().filter((c) => c.code === Code.Success).map((c) => c.transactionId);
    expect(applied.indexOf(`${round}-w1`)).toBeLessThan(applied.indexOf(`${round}-w2`));
  });

  // After an unknown outcome, a final refusal of a retry is taken as "not applied" without asking `status`.
  it("a credit the wallet applied is not recorded as failed when a later retry is refused", async () => {
    const { player, token, round } = ids();
    const session = await launch(token, player);
    expect(status(await post(session, 'bet', { round_id: round, transaction_id: `${round}-b`, amount: '1.00' }))).toBe(200);
    sim.faults.applyThenDrop('credit', 1, { mode: 'reset', transactionId: `${round}-w` });
    sim.faults.failNext('credit', 1, Code.TokenDeactivated, { transactionId: `${round}-w` });
    expect(status(await post(session, 'win', { round_id: round, transaction_id: `${round}-w`, bet_transaction_id: `${round}-b`, amount: '2.00' }))).toBe(202);
    await runWorker();

    const record = await finalRecord(`${round}-w`);
    expect(sim.ledger.appliedCount(`${round}-w`)).toBe(1);
    expect(record.state).toBe('succeeded');
  });
});

describe('money through the real gateway and a worker, with the answer lost after the wallet applied', () => {
  it('a bet the wallet applied but whose answer was lost is refused and rolled back: the balance ends where it started', async () => {
    const { player, token, round } = ids();
    const session = await launch(token, player);
    const start = sim.ledger.balanceOf(player)!;
    sim.faults.applyThenDrop('debit', 1, { mode: 'hang', transactionId: `${round}-b` });
    const bet = await post(session, 'bet', { round_id: round, transaction_id: `${round}-b`, amount: '3.25' });
    expect(status(bet)).toBe(503);
    expect(sim.ledger.appliedCount(`${round}-b`)).toBe(1);
    await runWorker();

    const record = await finalRecord(`${round}-b`);
    expect(record.state).toBe('compensated');
    const compensationId = record.compensation!.transaction_id;
    expect(sim.ledger.appliedCount(compensationId)).toBe(1);
    expect(sim.ledger.transaction(`${round}-b`)).toMatchObject({ rolledBack: true });
    expect(sim.ledger.balanceOf(player)).toBe(start);
  });

  it('a win the wallet applied but whose answer was lost answers 202 and is credited exactly once', async () => {
    const { player, token, round } = ids();
    const session = await launch(token, player);
    expect(status(await post(session, 'bet', { round_id: round, transaction_id: `${round}-b`, amount: '1.00' }))).toBe(200);
    const afterBet = BigInt(sim.ledger.balanceOf(player)!.replace('.', ''));
    sim.faults.applyThenDrop('credit', 1, { mode: 'reset', transactionId: `${round}-w` });
    expect(status(await post(session, 'win', { round_id: round, transaction_id: `${round}-w`, bet_transaction_id: `${round}-b`, amount: '4.10' }))).toBe(202);
    await runWorker();

    expect((await finalRecord(`${round}-w`)).state).toBe('succeeded');
    expect(sim.ledger.appliedCount(`${round}-w`)).toBe(1);
    expect(BigInt(sim.ledger.balanceOf(player)!.replace('.', ''))).toBe(afterBet + 410n);
  });
});
