import { loadGatewayConfig, loadWorkerConfig } from '../../src/config/env';
import { stringifyJson, jsonNumber } from '../../src/lib/json';
import { waitFor } from '../../src/lib/wait-for';
import { startGateway, type RunningGateway } from '../../src/main/gateway';
import { createLogger } from '../../src/observability/logger';
import { startSimulator, type RunningSimulator } from '../../src/sim';
import type { RecordView } from '../../src/soak/checker';
import { EngineClient } from '../../src/soak/engine-client';
import type { Reply } from '../../src/soak/history';
import { Code } from '../../src/wallet/codes';
import { compensationTransactionId } from '../../src/duties/compensation-id';
import { startWorker, type RunningWorker } from '../../workers/worker';
import { BREAKER_POLICY } from '../../src/duties/breaker-policy';
import { createBreakerStore } from '../../src/store/breaker';
import { keysFor } from '../../src/store/keys';
import { closeRedis, createRedis } from '../../src/store/redis';
import { deletePrefix, redisUrl, testPrefix } from '../support/prefix';
import { DEFAULT_TOKEN_SESSION_CAP } from '../../src/config/env';

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
    DEAD_CHECK_INTERVAL_MS: '500',
    ADMIN_USER: 'ops',
    ADMIN_PASSWORD: 'ops-password',
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

/**
 * A second gateway on the same Redis that waits 5 s for the wallet: a call sent through it is
 * still at the wallet while the test's own gateway answers the engine's next calls.
 */
async function withSlowGateway(use: (slowClient: EngineClient) => Promise<void>): Promise<void> {
  const slow = await startGateway(loadGatewayConfig({ ...env, WALLET_TIMEOUT_MS: '5000' }), createLogger({ level: 'silent', name: 'regression-slow' }), { host: '127.0.0.1' });
  const slowClient = new EngineClient({ gateways: [slow.url], apiKey: KEY, adminUser: 'a', adminPassword: 'b', answerTimeoutMs: 10_000, resendDeadlineMs: 0 });
  try {
    await use(slowClient);
  } finally {
    await slowClient.close();
    await slow.close();
  }
}

async function runWorker(overrides: Record<string, string> = {}): Promise<void> {
  const config = loadWorkerConfig({ ...env, ...overrides });
  worker = await startWorker({ config, logger: createLogger({ level: 'silent', name: 'regression-worker' }) });
}

async function launch(token: string, player: string): Promise<string> {
  const launched = await client.launch({ token, player_id: player, site_id: '7', currency: 'EUR', game_id: 'slots' }, 0);
  if (!launched.ok) throw new Error(`launch failed: ${launched.detail}`);
  return launched.sessionId;
}

async function post(session: string, route: 'bet' | 'win' | 'refund' | 'end', fields: Record<string, unknown>): Promise<Reply> {
  const body = stringifyJson('amount' in fields ? { ...fields, amount: jsonNumber(String(fields.amount)) } : fields);
  return (await client.send(`/engine/v1/sessions/${session}/${route}`, body, [], 0)).reply;
}

async function finalRecord(id: string): Promise<RecordView> {
  return waitFor(`${id} final`, async () => {
    const view = await client.record(id, 0);
    return view && FINAL.has(view.state) ? view : undefined;
  }, 20_000);
}

const callsOf = (operation: string, transactionId?: string) =>
  sim.calls().filter((c) => c.operation === operation && (transactionId === undefined || c.transactionId === transactionId));

async function redrive(id: string): Promise<number> {
  const res = await fetch(`${gateway.url}/admin/transactions/${encodeURIComponent(id)}/redrive`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from('ops:ops-password').toString('base64')}` },
  });
  await res.arrayBuffer();
  return res.status;
}

function ids(): { player: string; token: string; round: string } {
  seq += 1;
  return { player: String(18446744073709551615n - BigInt(seq)), token: `tok-${prefix}-${seq}`, round: `r-${seq}` };
}

const status = (reply: Reply): number | string => (reply.kind === 'answer' ? reply.status : reply.reason);

describe('found by the soak', () => {
  it('a repeat of a bet still at the wallet, sent while the breaker is open, meets that bet (IN_PROGRESS), not a refusal', async () => {
    const { player, token, round } = ids();
    const session = await launch(token, player);
    // The first attempt goes through a gateway that waits 5 s for the wallet, which applies the
    // debit and never answers.
    const redis = createRedis(redisUrl());
    try {
      await withSlowGateway(async (slowClient) => {
        sim.faults.applyThenDrop('debit', 1, { mode: 'hang', transactionId: `${round}-b` });
        const body = stringifyJson({ round_id: round, transaction_id: `${round}-b`, amount: jsonNumber('1.00') });
        const first = slowClient.send(`/engine/v1/sessions/${session}/bet`, body, [], 0);
        await waitFor('the debit at the wallet', async () => callsOf('debit', `${round}-b`).length > 0);
        await createBreakerStore(redis, keysFor(prefix), BREAKER_POLICY).report('open', Date.now(), 'test');
        await waitFor('the gateway sees the breaker open', async () => (await (await fetch(`${gateway.url}/readyz`)).json() as { checks?: { wallet?: string } }).checks?.wallet === 'open');
        const replies: Reply[] = [];
        await client.send(`/engine/v1/sessions/${session}/bet`, body, replies, 0);
        expect(replies[0]).toMatchObject({ status: 409, code: 'IN_PROGRESS' });
        expect(callsOf('debit', `${round}-b`)).toHaveLength(1);
        await first;
      });
    } finally {
      await closeRedis(redis);
    }
  }, 30_000);

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
    // The first session still plays: the token is not terminated under it (contract 5.6) ...
    expect(sim.calls().filter((c) => c.operation === 'terminate')).toHaveLength(0);
    // ... until it ends too.
    expect([200, 202]).toContain(status(await post(first, 'end', {})));
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

/**
 * Money at the edges (contract 5.3-5.6): the interleavings the soak did not play, each
 * asserting what the wallet applied. Each of these lost or misstated money before the fix.
 */
describe('money at the edges', () => {
  const balanceOf = (player: string) => sim.ledger.balanceOf(player);

  it('1. a win racing `end`: accepted means credited exactly once, else SESSION_ENDED with no credit', async () => {
    const { player, token, round } = ids();
    const session = await launch(token, player);
    expect(status(await post(session, 'bet', { round_id: round, transaction_id: `${round}-b`, amount: '1.00' }))).toBe(200);
    await runWorker();
    sim.faults.latency('terminate', 1500);
    sim.faults.failNext('credit', 6, Code.InternalServiceError, { transactionId: `${round}-w` });
    const ending = post(session, 'end', {});
    await new Promise((r) => setTimeout(r, 300));
    const win = await post(session, 'win', { round_id: round, transaction_id: `${round}-w`, bet_transaction_id: `${round}-b`, amount: '2.00' });
    expect([200, 202, 409]).toContain(status(await ending));
    if (status(win) === 409) {
      expect(win.kind === 'answer' && win.code).toBe('SESSION_ENDED');
      expect(callsOf('credit', `${round}-w`)).toHaveLength(0);
    } else {
      expect([200, 202]).toContain(status(win));
      expect((await finalRecord(`${round}-w`)).state).toBe('succeeded');
      expect(sim.ledger.appliedCount(`${round}-w`)).toBe(1);
    }
  }, 30_000);

  it('2. a refund naming another bet is BET_NOT_FOUND and cannot take over the in-flight debit\'s compensation', async () => {
    const { player, token, round } = ids();
    const session = await launch(token, player);
    const start = balanceOf(player);
    sim.faults.applyThenDrop('debit', 1, { mode: 'hang', transactionId: `${round}-b` });
    const bet = post(session, 'bet', { round_id: round, transaction_id: `${round}-b`, amount: '3.00' });
    await waitFor('the debit at the wallet', async () => callsOf('debit', `${round}-b`).length > 0);
    const refund = await post(session, 'refund', { round_id: round, transaction_id: `${round}-r`, bet_transaction_id: `${round}-other`, amount: '3.00' });
    expect(status(refund)).toBe(422);
    expect(refund.kind === 'answer' && refund.code).toBe('BET_NOT_FOUND');
    expect(status(await bet)).toBe(503);
    await runWorker();
    expect((await finalRecord(`${round}-b`)).state).toBe('compensated');
    await waitFor('the debit rolled back at the wallet', async () => balanceOf(player) === start);
    expect(callsOf('rollback', `${round}-r`)).toHaveLength(0);
  }, 30_000);

  it('3. a debit the wallet applies after the gateway gave up is rolled back when the re-check finds it', async () => {
    const { player, token, round } = ids();
    const session = await launch(token, player);
    const start = balanceOf(player);
    // Answered (and applied) 4.5 s after it was sent, long after the 1 s deadline and after the
    // compensation concluded from 34s and one status that the debit was never applied.
    sim.faults.latency('debit', 4500);
    expect(status(await post(session, 'bet', { round_id: round, transaction_id: `${round}-b`, amount: '2.50' }))).toBe(503);
    sim.faults.latency('debit', 0);
    await runWorker();
    await waitFor('the debit applied late', async () => sim.ledger.appliedCount(`${round}-b`) === 1, 10_000);
    await waitFor('the late debit rolled back', async () => balanceOf(player) === start, 15_000);
    expect(sim.ledger.appliedCount(`${round}-b`)).toBe(1);
    expect((await finalRecord(`${round}-b`)).state).toBe('compensated');
  }, 40_000);

  it('3b. a watched debit holds its token\'s terminate until its window ends: one applied late, while a terminate would have been on its way, is rolled back first', async () => {
    const { player, token, round } = ids();
    const session = await launch(token, player);
    const start = balanceOf(player);
    // Applied 4 s after it was sent: the gateway gave up at 1 s, the compensation found it absent.
    sim.faults.delayNext('debit', 1, 4000, { transactionId: `${round}-b` });
    expect(status(await post(session, 'bet', { round_id: round, transaction_id: `${round}-b`, amount: '1.25' }))).toBe(503);
    await runWorker({ DEAD_CHECK_INTERVAL_MS: '2000', DEAD_CHECK_WINDOW_MS: '7000' });
    await waitFor('the compensation found the debit absent', async () => (await client.record(`${round}-b`, 0))?.state === 'compensated', 15_000);
    // A terminate sent now would be held at the wallet past the debit's late application: a status
    // question right before it would have said "not applied", and the token would then be gone.
    sim.faults.delayNext('terminate', 1, 3000);
    expect([200, 202]).toContain(status(await post(session, 'end', {})));
    await waitFor('the debit applied late', async () => sim.ledger.appliedCount(`${round}-b`) === 1, 10_000);
    await waitFor('the token terminated', async () => callsOf('terminate').some((c) => c.code === Code.Success), 25_000);
    expect(balanceOf(player)).toBe(start);
    const ops = sim.calls().filter((c) => c.code === Code.Success).map((c) => c.operation);
    expect(ops.lastIndexOf('terminate')).toBeGreaterThan(ops.lastIndexOf('rollback'));
  }, 50_000);

  it('3c. a compensation whose status triage got no clear answer watches its debit, and the debit applied late is rolled back', async () => {
    const { player, token, round } = ids();
    const session = await launch(token, player);
    const start = balanceOf(player);
    sim.faults.delayNext('debit', 1, 5000, { transactionId: `${round}-b` });
    expect(status(await post(session, 'bet', { round_id: round, transaction_id: `${round}-b`, amount: '2.25' }))).toBe(503);
    // The rollbacks find no debit (34) before it is applied; the status question after them fails.
    sim.faults.failNext('status', 1, Code.InternalServiceError);
    await runWorker({ DEAD_CHECK_INTERVAL_MS: '1000', DEAD_CHECK_WINDOW_MS: '15000' });
    await waitFor('the debit applied late', async () => sim.ledger.appliedCount(`${round}-b`) === 1, 10_000);
    await waitFor('the late debit rolled back', async () => balanceOf(player) === start, 15_000);
    expect((await finalRecord(`${round}-b`)).state).toBe('compensated');
  }, 40_000);

  it('3d. a terminate that waited for a watched debit still has its whole retry window when it first fails', async () => {
    const { player, token, round } = ids();
    const session = await launch(token, player);
    // Refused with 12: compensated; the rollback finds no debit, so the debit is watched for 3 s.
    sim.faults.failNext('debit', 1, Code.InternalServiceError, { transactionId: `${round}-b` });
    expect(status(await post(session, 'bet', { round_id: round, transaction_id: `${round}-b`, amount: '1.10' }))).toBe(500);
    await runWorker({ DEAD_CHECK_INTERVAL_MS: '1000', DEAD_CHECK_WINDOW_MS: '3000' });
    await waitFor('the debit compensated and watched', async () => (await client.record(`${round}-b`, 0))?.state === 'compensated', 15_000);
    sim.faults.failNext('terminate', 1, Code.InternalServiceError);
    expect(status(await post(session, 'end', {}))).toBe(202);
    await waitFor('the token terminated', async () => callsOf('terminate').some((c) => c.code === Code.Success), 20_000);
    expect(callsOf('terminate').map((c) => c.code)).toEqual([Code.InternalServiceError, Code.Success]);
  }, 40_000);

  it('4. a debit answered 200 whose settle Redis lost is asked about, never rolled back, and its round plays on', async () => {
    const { player, token, round } = ids();
    const session = await launch(token, player);
    expect(status(await post(session, 'bet', { round_id: round, transaction_id: `${round}-b`, amount: '1.50' }))).toBe(200);
    const afterBet = balanceOf(player);
    // What an AOF that lost the settle leaves behind: the claimed record, pending, with its lease over.
    const redis = createRedis(redisUrl());
    try {
      const keys = keysFor(prefix);
      await redis.hset(keys.transaction(`${round}-b`), 'state', 'pending', 'attempts', '0', 'history', '', 'last_code', '');
      await redis.zadd(keys.pendingIndex(), 0, `${round}-b`);
    } finally {
      await closeRedis(redis);
    }
    await runWorker();
    expect((await finalRecord(`${round}-b`)).state).toBe('succeeded');
    expect(callsOf('rollback')).toHaveLength(0);
    expect(balanceOf(player)).toBe(afterBet);
    expect(status(await post(session, 'win', { round_id: round, transaction_id: `${round}-w`, bet_transaction_id: `${round}-b`, amount: '3.00' }))).toBe(200);
  }, 30_000);

  it('5. a terminate that keeps failing is retried until its window, listed, and driven again by a repeated end', async () => {
    const { player, token } = ids();
    const session = await launch(token, player);
    await runWorker({ DEAD_CHECK_WINDOW_MS: '1500' });
    sim.faults.failNext('terminate', 1000, Code.InternalServiceError);
    expect(status(await post(session, 'end', {}))).toBe(202);
    const redis = createRedis(redisUrl());
    try {
      await waitFor('the terminate given up and listed', async () => (await redis.zcard(keysFor(prefix).terminateFailedIndex())) === 1, 15_000);
      expect(callsOf('terminate').length).toBeGreaterThan(2);
      sim.faults.clear();
      // Driven again: sent at once (200), or by the job (202).
      expect([200, 202]).toContain(status(await post(session, 'end', {})));
      await waitFor('the token terminated', async () => callsOf('terminate').some((c) => c.code === Code.Success));
      await waitFor('the session ended', async () => (await redis.hget(keysFor(prefix).session(session), 'state')) === 'ended');
      expect(await redis.zcard(keysFor(prefix).terminateFailedIndex())).toBe(0);
    } finally {
      await closeRedis(redis);
    }
  }, 30_000);

  it('6. a dead win holds the terminate; its redrive credits it, and the terminate goes after it', async () => {
    const { player, token, round } = ids();
    const session = await launch(token, player);
    expect(status(await post(session, 'bet', { round_id: round, transaction_id: `${round}-b`, amount: '1.00' }))).toBe(200);
    sim.faults.failNext('credit', 4, Code.TransactionNotFound, { transactionId: `${round}-w` });
    expect(status(await post(session, 'win', { round_id: round, transaction_id: `${round}-w`, bet_transaction_id: `${round}-b`, amount: '2.00' }))).toBe(202);
    await runWorker();
    expect((await finalRecord(`${round}-w`)).state).toBe('dead');
    expect(status(await post(session, 'end', {}))).toBe(202);
    expect(callsOf('terminate')).toHaveLength(0);

    expect(await redrive(`${round}-w`)).toBe(202);
    expect((await finalRecord(`${round}-w`)).state).toBe('succeeded');
    expect(sim.ledger.appliedCount(`${round}-w`)).toBe(1);
    await waitFor('the token terminated', async () => callsOf('terminate').some((c) => c.code === Code.Success));
    const ops = sim.calls().filter((c) => c.code === Code.Success).map((c) => c.operation);
    expect(ops.lastIndexOf('terminate')).toBeGreaterThan(ops.lastIndexOf('credit'));
  }, 30_000);

  it('7. ending the older of two sessions on one token does not cut off the newer one', async () => {
    const { player, token, round } = ids();
    const older = await launch(token, player);
    const newer = await launch(token, player);
    expect(status(await post(newer, 'bet', { round_id: round, transaction_id: `${round}-b`, amount: '2.00' }))).toBe(200);
    expect(status(await post(older, 'end', {}))).toBe(202);
    expect(callsOf('terminate')).toHaveLength(0);
    expect(status(await post(newer, 'win', { round_id: round, transaction_id: `${round}-w`, bet_transaction_id: `${round}-b`, amount: '5.00' }))).toBe(200);
    expect(sim.ledger.appliedCount(`${round}-w`)).toBe(1);
    await runWorker();
    expect(status(await post(newer, 'end', {}))).toBe(200);
    expect(callsOf('terminate').filter((c) => c.code === Code.Success)).toHaveLength(1);
  }, 30_000);

  it('8. a session whose launch answer was lost is never ended: the token is terminated once that session expires, not a minute later', async () => {
    const { player, token, round } = ids();
    // The engine never learned of this session (its answer lost with a killed gateway) and launched again.
    const orphan = await launch(token, player);
    const played = await launch(token, player);
    expect(status(await post(played, 'bet', { round_id: round, transaction_id: `${round}-b`, amount: '2.00' }))).toBe(200);
    expect(status(await post(played, 'win', { round_id: round, transaction_id: `${round}-w`, bet_transaction_id: `${round}-b`, amount: '5.00' }))).toBe(200);
    // The orphan's idle lifetime (SESSION_TTL_SECONDS) is about to run out when the engine ends its own session.
    await gateway.parts.redis.pexpire(gateway.parts.layout.keys(0).session(orphan), 2000);
    expect(status(await post(played, 'end', {}))).toBe(202);
    expect(callsOf('terminate')).toHaveLength(0);
    await runWorker({ SWEEP_INTERVAL_MS: '200' });
    // The sweeper's usual look at a token waiting for another session is a minute away.
    await waitFor('the token terminated', async () => callsOf('terminate').some((c) => c.code === Code.Success), 15_000);
    expect(sim.ledger.appliedCount(`${round}-w`)).toBe(1);
    expect(callsOf('terminate').filter((c) => c.code === Code.Success)).toHaveLength(1);
  }, 40_000);
});

/**
 * A win or refund follows its bet's fate, refunds and wins exclude each other, the currency is the
 * bet's, idempotency reads what the engine sent, derived ids are reserved, and an operator's "not
 * applied" on a rollback re-opens its debit (contract 5.1, 5.2, 5.4). Each of these moved money the
 * wrong way or stranded it before; each asserts what the wallet applied.
 */
describe('a win or refund follows its bet', () => {
  const minor = (balance: string | undefined) => BigInt(balance!.replace('.', ''));

  /** One engine call, no repeat, with its whole answer. */
  async function once(session: string, route: 'bet' | 'win' | 'refund', fields: Record<string, unknown>): Promise<{ status: number; body: unknown }> {
    const res = await fetch(`${gateway.url}/engine/v1/sessions/${session}/${route}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: stringifyJson('amount' in fields ? { ...fields, amount: jsonNumber(String(fields.amount)) } : fields),
    });
    return { status: res.status, body: await res.json() };
  }

  async function resolve(id: string, outcome: 'applied' | 'not_applied' | 'bet_not_applied'): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await fetch(`${gateway.url}/admin/api/transactions/${encodeURIComponent(id)}/resolve`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from('ops:ops-password').toString('base64')}`, 'content-type': 'application/json' },
      body: JSON.stringify({ note: 'checked at the wallet', outcome }),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  it('a win sent while its bet is still at the wallet gets IN_PROGRESS and nothing is sent; once the bet was refused, BET_NOT_OPEN; the wallet ends where it started', async () => {
    const { player, token, round } = ids();
    const session = await launch(token, player);
    const start = sim.ledger.balanceOf(player);
    // The bet goes through a gateway that waits 5 s for the wallet, which applies the debit at once and never answers.
    await withSlowGateway(async (slowClient) => {
      sim.faults.applyThenDrop('debit', 1, { mode: 'hang', transactionId: `${round}-b` });
      const bet = slowClient.send(`/engine/v1/sessions/${session}/bet`, stringifyJson({ round_id: round, transaction_id: `${round}-b`, amount: jsonNumber('10.00') }), [], 0);
      await waitFor('the debit at the wallet', async () => callsOf('debit', `${round}-b`).length > 0);
      const win = { round_id: round, transaction_id: `${round}-w`, bet_transaction_id: `${round}-b`, amount: '25.00', round_closed: true };
      // (sent once: the engine client would repeat an IN_PROGRESS until the bet's fate is known)
      expect(await once(session, 'win', win)).toMatchObject({ status: 409, body: { error: { code: 'IN_PROGRESS' } } });
      expect(status((await bet).reply)).toBe(503);
      await runWorker();
      expect((await finalRecord(`${round}-b`)).state).toBe('compensated');
      // the round was closed by the gateway's compensation, not by an engine call: the win learns why
      expect(await post(session, 'win', win)).toMatchObject({ status: 409, code: 'BET_NOT_OPEN' });
      expect(callsOf('credit')).toHaveLength(0);
      expect(sim.ledger.balanceOf(player)).toBe(start);
    });
  }, 30_000);

  it('a win or refund of a bet the wallet refused for good is BET_NOT_OPEN, not BET_NOT_FOUND, with no wallet call', async () => {
    const { player, token, round } = ids();
    const session = await launch(token, player);
    sim.faults.failNext('debit', 1, Code.InsufficientFunds, { transactionId: `${round}-b` });
    expect(await once(session, 'bet', { round_id: round, transaction_id: `${round}-b`, amount: '1.00' })).toMatchObject({ status: 422, body: { error: { code: 'WALLET_REJECTED' } } });
    const settle = { round_id: round, bet_transaction_id: `${round}-b`, amount: '1.00' };
    expect(await once(session, 'win', { ...settle, transaction_id: `${round}-w` })).toMatchObject({ status: 409, body: { error: { code: 'BET_NOT_OPEN' } } });
    const relaunched = await launch(token, player);
    expect(await once(relaunched, 'refund', { ...settle, transaction_id: `${round}-f` })).toMatchObject({ status: 409, body: { error: { code: 'BET_NOT_OPEN' } } });
    expect(await once(session, 'win', { ...settle, round_id: `${round}-other`, transaction_id: `${round}-w2` })).toMatchObject({ status: 422, body: { error: { code: 'BET_NOT_FOUND' } } });
    expect(callsOf('credit')).toHaveLength(0);
    expect(callsOf('rollback')).toHaveLength(0);
  }, 30_000);

  it('a refund after a win, and a win after a refund, are BET_NOT_OPEN in an open round, with no wallet call', async () => {
    const { player, token, round } = ids();
    const session = await launch(token, player);
    expect(status(await post(session, 'bet', { round_id: round, transaction_id: `${round}-b`, amount: '2.00' }))).toBe(200);
    expect(status(await post(session, 'win', { round_id: round, transaction_id: `${round}-w`, bet_transaction_id: `${round}-b`, amount: '3.00', round_closed: false }))).toBe(200);
    expect(await post(session, 'refund', { round_id: round, transaction_id: `${round}-rf`, bet_transaction_id: `${round}-b`, amount: '2.00', round_closed: false })).toMatchObject({ status: 409, code: 'BET_NOT_OPEN' });
    expect(callsOf('rollback')).toHaveLength(0);

    const other = `${round}-2`;
    expect(status(await post(session, 'bet', { round_id: other, transaction_id: `${other}-b`, amount: '2.00' }))).toBe(200);
    expect(status(await post(session, 'refund', { round_id: other, transaction_id: `${other}-rf`, bet_transaction_id: `${other}-b`, amount: '2', round_closed: false }))).toBe(200);
    expect(await post(session, 'win', { round_id: other, transaction_id: `${other}-w`, bet_transaction_id: `${other}-b`, amount: '3.00', round_closed: false })).toMatchObject({ status: 409, code: 'BET_NOT_OPEN' });
    expect(callsOf('credit', `${other}-w`)).toHaveLength(0);
    expect(sim.ledger.appliedCount(`${round}-w`)).toBe(1);
    expect(sim.ledger.transaction(`${other}-b`)).toMatchObject({ rolledBack: true });
  }, 30_000);

  it("a win or refund through the player's session in another currency is CURRENCY_MISMATCH, whatever its amount, with no wallet call", async () => {
    const { player, token, round } = ids();
    const eur = await launch(token, player);
    // The same player on a JPY token (a wallet that keeps one balance per currency; the simulator
    // keeps one currency a player, so the session is made as a launch would make it).
    const jpy = (await gateway.parts.sessions.create({ token: `${token}-jpy`, playerId: player, siteId: '7', currency: 'JPY', gameId: 'slots', balance: '100000' }, Date.now(), DEFAULT_TOKEN_SESSION_CAP)).session!;
    const launched = { sessionId: jpy.sessionId };
    expect(status(await post(eur, 'bet', { round_id: round, transaction_id: `${round}-b`, amount: '10.00' }))).toBe(200);
    const refund = { round_id: round, transaction_id: `${round}-rf`, bet_transaction_id: `${round}-b`, amount: '1000' };
    expect(await post(launched.sessionId, 'refund', refund)).toMatchObject({ status: 422, code: 'CURRENCY_MISMATCH' });
    expect(await post(launched.sessionId, 'win', { ...refund, transaction_id: `${round}-w` })).toMatchObject({ status: 422, code: 'CURRENCY_MISMATCH' });
    expect(callsOf('rollback')).toHaveLength(0);
    expect(callsOf('credit')).toHaveLength(0);
    // the bet's own currency, as an exact decimal: taken, and sent with the bet's amount byte for byte
    expect(status(await post(eur, 'refund', { ...refund, amount: '10' }))).toBe(200);
    expect(sim.ledger.transaction(`${round}-b`)).toMatchObject({ rolledBack: true });
    expect(callsOf('rollback', `${round}-rf`).map((c) => /"amount":([0-9.]+)/.exec(c.rawBody)?.[1])).toEqual(['10.00']);
  }, 30_000);

  it('a bet or win repeated byte for byte through a relaunched session of the same token returns the stored outcome', async () => {
    const { player, token, round } = ids();
    const first = await launch(token, player);
    const bet = { round_id: round, transaction_id: `${round}-b`, amount: '1.50' };
    const win = { round_id: round, transaction_id: `${round}-w`, bet_transaction_id: `${round}-b`, amount: '4.00' };
    expect(status(await post(first, 'bet', bet))).toBe(200);
    expect(status(await post(first, 'win', win))).toBe(200);
    const relaunched = await launch(token, player);
    expect(await post(relaunched, 'bet', bet)).toMatchObject({ status: 200 });
    expect(await post(relaunched, 'win', win)).toMatchObject({ status: 200 });
    expect(callsOf('debit', `${round}-b`)).toHaveLength(1);
    expect(callsOf('credit', `${round}-w`)).toHaveLength(1);
    // another body is still a conflict
    expect(await post(relaunched, 'win', { ...win, amount: '4.01' })).toMatchObject({ status: 409, code: 'IDEMPOTENCY_CONFLICT' });
  }, 30_000);

  it("an engine id in the gateway's reserved namespace (a compensation's id) is refused with 400 naming the field, and the bet it would have taken is rolled back", async () => {
    const { player, token, round } = ids();
    const session = await launch(token, player);
    const start = sim.ledger.balanceOf(player);
    sim.faults.applyThenDrop('debit', 1, { mode: 'hang', transactionId: `${round}-b` });
    expect(status(await post(session, 'bet', { round_id: round, transaction_id: `${round}-b`, amount: '1.00' }))).toBe(503);
    const derived = compensationTransactionId(`${round}-b`);
    const taken = await once(session, 'bet', { round_id: `${round}-x`, transaction_id: derived, amount: '1.00' });
    expect(taken).toMatchObject({ status: 400, body: { error: { code: 'VALIDATION_FAILED', fields: [{ field: 'transaction_id' }] } } });
    expect(await post(session, 'win', { round_id: round, transaction_id: `GW-${round}`, bet_transaction_id: `${round}-b`, amount: '1.00' })).toMatchObject({ status: 400 });
    await runWorker();
    expect((await finalRecord(`${round}-b`)).state).toBe('compensated');
    expect(sim.ledger.appliedCount(derived)).toBe(1);
    expect(sim.ledger.balanceOf(player)).toBe(start);
  }, 30_000);

  /**
   * A refund acknowledged while its bet is still at the wallet, which then refuses the bet for good
   * (106, held 3 s at the wallet first): the bet never moved money, so the refund has nothing to
   * reverse. It ends succeeded, saying so, with no rollback applied, no operator, and its token
   * terminated once its session ends. `workerFirst`: the refund's retries run (and die on 34) while
   * the bet is still held; else they run only after the bet's refusal.
   */
  async function refundOfBetRefusedForGood(workerFirst: boolean): Promise<void> {
    const { player, token, round } = ids();
    const session = await launch(token, player);
    const start = sim.ledger.balanceOf(player);
    await withSlowGateway(async (slowClient) => {
      if (workerFirst) await runWorker();
      sim.faults.latency('debit', 3000);
      sim.faults.failNext('debit', 1, Code.InsufficientFunds, { transactionId: `${round}-b` });
      const bet = slowClient.send(`/engine/v1/sessions/${session}/bet`, stringifyJson({ round_id: round, transaction_id: `${round}-b`, amount: jsonNumber('6.00') }), [], 0);
      // (the call log names the transaction only once the held call is read)
      await waitFor('the debit at the wallet', async () => callsOf('debit').length > 0);
      sim.faults.latency('debit', 0);
      const refund = { round_id: round, transaction_id: `${round}-rf`, bet_transaction_id: `${round}-b`, amount: '6.00' };
      expect(await once(session, 'refund', refund)).toMatchObject({ status: 202 });
      if (workerFirst) {
        expect((await finalRecord(`${round}-rf`)).state).toBe('dead');
        // ended while the dead refund holds the token: the terminate waits for it
        expect(status(await post(session, 'end', {}))).toBe(202);
      }
      expect(status((await bet).reply)).toBe(422);
      if (!workerFirst) await runWorker();
      const settled = await waitFor(`${round}-rf succeeded`, async () => {
        const record = await gateway.parts.transactions.get(`${round}-rf`, gateway.parts.transactions.shardOf({ playerId: player, siteId: '7' }));
        return record?.state === 'succeeded' ? record : undefined;
      }, 20_000);
      expect(settled).toMatchObject({ lastWalletCode: Code.Success, resolution: null, note: expect.stringContaining('nothing reversed') });
      expect(await client.record(`${round}-b`, 0)).toMatchObject({ state: 'failed' });
      expect(sim.ledger.appliedCount(`${round}-b`)).toBe(0);
      expect(sim.ledger.appliedCount(`${round}-rf`)).toBe(0);
      expect(sim.ledger.balanceOf(player)).toBe(start);
      // a repeat of the refund gets the stored outcome
      expect(await once(session, 'refund', refund)).toMatchObject({ status: 200, body: { state: 'succeeded' } });
      if (!workerFirst) expect(status(await post(session, 'end', {}))).toBe(200);
      await waitFor('the token terminated', async () => callsOf('terminate').some((c) => c.code === Code.Success));
      expect(callsOf('terminate').filter((c) => c.code === Code.Success)).toHaveLength(1);
    });
  }

  it('a refund acknowledged while its bet is at the wallet ends succeeded, nothing reversed, when the wallet then refuses the bet for good', async () => {
    await refundOfBetRefusedForGood(false);
  }, 40_000);

  it('a refund that went dead on 34 while its bet was at the wallet is settled, nothing reversed, by the refusal of its bet for good: no operator', async () => {
    await refundOfBetRefusedForGood(true);
  }, 40_000);

  /**
   * An engine refund sent while its bet is at the wallet, which answers that bet 500 without applying
   * it (`lateMs` 0) or applies it only after the gateway gave up (`lateMs` > 0): the refund stands in
   * for the bet's compensation, and its rollbacks meet no bet (34). As the compensation would, it
   * asks `status` of the bet; "not there" means nothing to reverse: succeeded, saying so, no
   * operator, the bet `compensated` and watched, so a bet applied late is still rolled back.
   */
  async function refundOfBetNeverApplied(lateMs: number, statusUnclear = false): Promise<void> {
    const { player, token, round } = ids();
    const session = await launch(token, player);
    const start = sim.ledger.balanceOf(player);
    // (held inside the gateway's 1 s deadline when refused, past it when applied late)
    sim.faults.latency('debit', lateMs > 0 ? lateMs : 800);
    if (lateMs === 0) sim.faults.failNext('debit', 1, Code.InternalServiceError, { transactionId: `${round}-b` });
    const bet = post(session, 'bet', { round_id: round, transaction_id: `${round}-b`, amount: '3.00' });
    await waitFor('the debit at the wallet', async () => callsOf('debit').length > 0);
    sim.faults.latency('debit', 0);
    const refund = { round_id: round, transaction_id: `${round}-rf`, bet_transaction_id: `${round}-b`, amount: '3.00' };
    expect(await once(session, 'refund', refund)).toMatchObject({ status: 202 });
    expect(status(await bet)).toBe(lateMs > 0 ? 503 : 500);
    if (statusUnclear) sim.faults.failNext('status', 1, Code.InternalServiceError, { transactionId: `${round}-b` });
    await runWorker();
    if (statusUnclear) {
      // No clear answer: the bet may be held, so the refund is not called succeeded; the operator
      // who found the bet never applied ends it succeeded, nothing reversed, never failed.
      expect(await finalRecord(`${round}-rf`)).toMatchObject({ state: 'dead' });
      expect(await resolve(`${round}-rf`, 'bet_not_applied')).toMatchObject({ status: 200, body: { state_after: 'succeeded' } });
      expect(await finalRecord(`${round}-b`)).toMatchObject({ state: 'failed' });
    }
    expect(await finalRecord(`${round}-rf`)).toMatchObject({ state: 'succeeded' });
    const settled = await gateway.parts.transactions.get(`${round}-rf`, gateway.parts.transactions.shardOf({ playerId: player, siteId: '7' }));
    expect(settled).toMatchObject({ lastWalletCode: Code.Success, resolution: statusUnclear ? 'bet_not_applied' : null, note: expect.stringContaining('nothing reversed') });
    expect(callsOf('rollback', `${round}-rf`).every((c) => c.code === Code.TransactionNotFound)).toBe(true);
    expect(callsOf('status', `${round}-b`).length).toBeGreaterThan(0);
    expect(sim.ledger.appliedCount(`${round}-rf`)).toBe(0);
    if (lateMs > 0) {
      await waitFor('the debit applied late', async () => sim.ledger.appliedCount(`${round}-b`) === 1, 10_000);
      await waitFor('the late debit rolled back', async () => sim.ledger.balanceOf(player) === start, 15_000);
      expect(sim.ledger.appliedCount(compensationTransactionId(`${round}-b`))).toBe(1);
    } else {
      expect(sim.ledger.appliedCount(`${round}-b`)).toBe(0);
    }
    expect(await finalRecord(`${round}-b`)).toMatchObject({ state: statusUnclear ? 'failed' : 'compensated' });
    expect(sim.ledger.balanceOf(player)).toBe(start);
    // a repeat of the refund gets the stored outcome
    expect(await once(session, 'refund', refund)).toMatchObject({ status: 200, body: { state: 'succeeded' } });
  }

  it('a refund acknowledged while its bet is at the wallet, which never applies the bet, ends succeeded, nothing reversed, after its 34s and a status of the bet: no operator', async () => {
    await refundOfBetNeverApplied(0);
  }, 40_000);

  it('a refund that stood in for its bet\'s compensation watches the bet as the compensation would: a bet the wallet applies after status said "not there" is still rolled back', async () => {
    await refundOfBetNeverApplied(4500);
  }, 40_000);

  it("a refund standing in for its bet's compensation, dead after status gave no clear answer of the bet, ends succeeded, nothing reversed, by the operator's 'the bet was never applied'", async () => {
    await refundOfBetNeverApplied(0, true);
  }, 40_000);

  it("an operator's 'not applied' on a dead compensation re-opens its debit, which is rolled back anew with an id of its own", async () => {
    const { player, token, round } = ids();
    const session = await launch(token, player);
    const start = sim.ledger.balanceOf(player);
    sim.faults.applyThenDrop('debit', 1, { mode: 'hang', transactionId: `${round}-b` });
    const first = compensationTransactionId(`${round}-b`);
    sim.faults.failNext('rollback', 1, Code.TokenDeactivated, { transactionId: first });
    expect(status(await post(session, 'bet', { round_id: round, transaction_id: `${round}-b`, amount: '7.00' }))).toBe(503);
    await runWorker();
    expect((await finalRecord(first)).state).toBe('dead');
    expect(sim.ledger.balanceOf(player)).not.toBe(start);

    const resolved = await resolve(`${round}-b`, 'not_applied');
    expect(resolved).toMatchObject({ status: 200, body: { state_after: 'failed', compensation_started: compensationTransactionId(`${round}-b`, 1) } });
    const debit = await finalRecord(`${round}-b`);
    expect(debit).toMatchObject({ state: 'compensated', compensation: { transaction_id: compensationTransactionId(`${round}-b`, 1), state: 'succeeded' } });
    expect(sim.ledger.appliedCount(first)).toBe(0);
    expect(sim.ledger.balanceOf(player)).toBe(start);
  }, 30_000);

  it("an operator's 'not applied' on a dead refund that stood in for the compensation re-opens the debit too; 'the bet was never applied' alone makes a debit failed", async () => {
    const { player, token, round } = ids();
    const session = await launch(token, player);
    const start = minor(sim.ledger.balanceOf(player));
    sim.faults.applyThenDrop('debit', 1, { mode: 'hang', transactionId: `${round}-b` });
    const bet = post(session, 'bet', { round_id: round, transaction_id: `${round}-b`, amount: '4.00' });
    await waitFor('the debit at the wallet', async () => callsOf('debit', `${round}-b`).length > 0);
    // The engine's refund goes out while the bet is still at the wallet: it stands in for the compensation, then dies.
    sim.faults.failNext('rollback', 1, Code.InternalServiceError, { transactionId: `${round}-rf` });
    sim.faults.failNext('rollback', 1, Code.TokenDeactivated, { transactionId: `${round}-rf` });
    expect(status(await post(session, 'refund', { round_id: round, transaction_id: `${round}-rf`, bet_transaction_id: `${round}-b`, amount: '4.00' }))).toBe(202);
    expect(status(await bet)).toBe(503);
    await runWorker();
    expect((await finalRecord(`${round}-rf`)).state).toBe('dead');
    expect(await resolve(`${round}-rf`, 'not_applied')).toMatchObject({ status: 200, body: { compensation_started: compensationTransactionId(`${round}-b`) } });
    expect(await finalRecord(`${round}-b`)).toMatchObject({ state: 'compensated', compensation: { transaction_id: compensationTransactionId(`${round}-b`) } });
    expect(minor(sim.ledger.balanceOf(player))).toBe(start);

    // A bet the wallet never had, its compensation dead: only "the bet was never applied" fails it.
    const never = `${round}-n`;
    sim.faults.failNext('debit', 1, Code.InternalServiceError, { transactionId: `${never}-b` });
    sim.faults.failNext('rollback', 1, Code.TokenDeactivated, { transactionId: compensationTransactionId(`${never}-b`) });
    expect(status(await post(session, 'bet', { round_id: never, transaction_id: `${never}-b`, amount: '1.00' }))).toBe(500);
    expect((await finalRecord(compensationTransactionId(`${never}-b`))).state).toBe('dead');
    expect(await resolve(`${never}-b`, 'bet_not_applied')).toMatchObject({ status: 200, body: { state_after: 'failed' } });
    expect(await finalRecord(`${never}-b`)).toMatchObject({ state: 'failed' });
    expect(sim.ledger.appliedCount(`${never}-b`)).toBe(0);
    expect(minor(sim.ledger.balanceOf(player))).toBe(start);
  }, 40_000);
});
