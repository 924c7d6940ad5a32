import Redis from 'ioredis';
import { BREAKER_POLICY } from '../../src/duties/breaker-policy';
import { RedisServer } from '../../src/lib/redis-server';
import { waitFor } from '../../src/lib/wait-for';
import { createBreakerStore } from '../../src/store/breaker';
import { engine, launch, startHarness, uniqueId, type Harness } from '../support/gateway-harness';

/**
 * Contract 9 on a private primary with one replica: with REDIS_MIN_REPLICAS=1 an answer leaves only
 * once the replica acknowledged its writes, and a money call goes to the wallet only once the
 * replica has its claim (else a failover during the call would leave the money it moved with no
 * record). With the replica down the engine gets 503 NOT_DURABLE and nothing is sent; the same
 * request repeated once the replica is back gets the stored answer. The same for `end`. With
 * REDIS_MIN_REPLICAS=0 (the default) no WAIT is sent at all.
 */
jest.setTimeout(60_000);

let primary: RedisServer;
let replica: RedisServer;
const harnesses: Harness[] = [];

beforeAll(async () => {
  primary = await RedisServer.start();
  replica = await RedisServer.start({ replicaOf: { host: '127.0.0.1', port: primary.port } });
  await primary.waitForReplicas(1);
});

afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((h) => h.close()));
});

afterAll(async () => {
  await replica?.stop();
  await primary?.stop();
});

async function gatewayOn(minReplicas: number, env: Record<string, string> = {}): Promise<Harness> {
  const h = await startHarness({ label: 'durable', env: { REDIS_URL: primary.url, REDIS_MIN_REPLICAS: String(minReplicas), REDIS_WAIT_MS: '200', LOG_LEVEL: 'silent', ...env } });
  harnesses.push(h);
  return h;
}

async function waitCalls(): Promise<number> {
  const client = new Redis(primary.url);
  try {
    const stats = await client.info('commandstats');
    const match = /^cmdstat_wait:calls=(\d+)/m.exec(stats);
    return match === null ? 0 : Number(match[1]);
  } finally {
    client.disconnect();
  }
}

const codeOf = (res: { body: unknown }): string | undefined => (res.body as { error?: { code: string } }).error?.code;
const sent = (h: Harness, operation: string, transactionId: string): number => h.sim.calls().filter((c) => c.operation === operation && c.transactionId === transactionId).length;

it('answers once a replica acknowledged; NOT_DURABLE without one, with nothing sent; the repeat gets the stored answer', async () => {
  const h = await gatewayOn(1);
  const { sessionId } = await launch(h);
  const round = uniqueId('r');
  const betId = uniqueId('b');
  const bet = await engine(h, `/sessions/${sessionId}/bet`, { round_id: round, transaction_id: betId, amount: '1.00' });
  expect(bet.status).toBe(200);
  expect(await waitCalls()).toBeGreaterThan(0);

  await replica.kill();
  // Write-ahead: a claim the replica has not acknowledged is never sent. A win is kept and queued
  // for a worker (none runs here); the engine is told 503, safe to repeat.
  const win = { round_id: round, transaction_id: uniqueId('w'), bet_transaction_id: betId, amount: '2.50' };
  const first = await engine(h, `/sessions/${sessionId}/win`, win);
  expect({ status: first.status, code: codeOf(first) }).toEqual({ status: 503, code: 'NOT_DURABLE' });
  expect(sent(h, 'credit', win.transaction_id)).toBe(0);
  expect(await h.transactions.get(win.transaction_id)).toMatchObject({ state: 'pending', queued: true });
  // A bet is refused with nothing taken.
  const lateBet = { round_id: uniqueId('r'), transaction_id: uniqueId('b'), amount: '1.00' };
  const refused = await engine(h, `/sessions/${sessionId}/bet`, lateBet);
  expect({ status: refused.status, code: codeOf(refused) }).toEqual({ status: 503, code: 'NOT_DURABLE' });
  expect(sent(h, 'debit', lateBet.transaction_id)).toBe(0);
  const refusedRecord = (await h.transactions.get(lateBet.transaction_id))!;

  await replica.start();
  await primary.waitForReplicas(1);
  const again = await engine(h, `/sessions/${sessionId}/win`, win);
  expect({ status: again.status, state: (again.body as { state: string }).state }).toEqual({ status: 202, state: 'pending' });
  expect(sent(h, 'credit', win.transaction_id)).toBe(0);
  // The refused bet's repeat is claimed afresh ("safe to repeat") and goes through, once.
  const betAgain = await engine(h, `/sessions/${sessionId}/bet`, lateBet);
  expect({ status: betAgain.status, state: (betAgain.body as { state: string }).state }).toEqual({ status: 200, state: 'succeeded' });
  expect(sent(h, 'debit', lateBet.transaction_id)).toBe(1);
  expect(h.sim.ledger.appliedCount(lateBet.transaction_id)).toBe(1);
  // The same record claimed again keeps its first claim's time (the ledger names a record by its id
  // and creation time, and goes on numbering its changes).
  expect((await h.transactions.get(lateBet.transaction_id))!.createdAt).toBe(refusedRecord.createdAt);

  // `end` likewise: the ended session is promised only once a replica has it.
  await replica.kill();
  const ending = await engine(h, `/sessions/${sessionId}/end`, {});
  expect({ status: ending.status, code: codeOf(ending) }).toEqual({ status: 503, code: 'NOT_DURABLE' });
  await replica.start();
  await primary.waitForReplicas(1);
  // Ended, its terminate held by the queued win (contract 5.6).
  const ended = await engine(h, `/sessions/${sessionId}/end`, {});
  expect({ status: ended.status, state: (ended.body as { state: string }).state }).toEqual({ status: 202, state: 'pending' });
});

it('the claim\'s lease covers the write-ahead WAIT: the pending-index score is claim + REDIS_WAIT_MS + WALLET_TIMEOUT_MS + 5 s', async () => {
  const h = await gatewayOn(1, { REDIS_WAIT_MS: '3000', WALLET_TIMEOUT_MS: '1000' });
  const { sessionId } = await launch(h);
  const betId = uniqueId('b');
  h.sim.faults.applyThenDrop('debit', 1, { mode: 'hang' });
  // supertest sends only once .then()ed: start it now.
  const answered = engine(h, `/sessions/${sessionId}/bet`, { round_id: uniqueId('r'), transaction_id: betId, amount: '1.00' }).then((res) => res);
  // While the claim waits for its replica and then the call hangs: its pending-index entry is
  // when the sweeper may take it over.
  const leaseUntil = await waitFor('the bet claimed', async () => (await h.redis.zscore(h.keys.pendingIndex(), betId)) ?? undefined, 10_000);
  const claimed = await h.transactions.get(betId);
  expect(Number(leaseUntil) - claimed!.createdAt).toBe(3000 + 1000 + 5000);
  expect((await answered).status).toBe(503);
});

it('a bet refused NOT_DURABLE whose session is gone by the repeat is answered SESSION_NOT_FOUND, not 503 again', async () => {
  const h = await gatewayOn(1);
  const { sessionId } = await launch(h);
  await replica.kill();
  const bet = { round_id: uniqueId('r'), transaction_id: uniqueId('b'), amount: '1.00' };
  const first = await engine(h, `/sessions/${sessionId}/bet`, bet);
  expect({ status: first.status, code: codeOf(first) }).toEqual({ status: 503, code: 'NOT_DURABLE' });
  await replica.start();
  await primary.waitForReplicas(1);
  // The session expires before the engine repeats (its key's TTL ran out).
  await h.redis.del(h.keys.session(sessionId));
  expect(await h.sessions.get(sessionId)).toBeUndefined();
  const again = await engine(h, `/sessions/${sessionId}/bet`, bet);
  expect({ status: again.status, code: codeOf(again) }).toEqual({ status: 404, code: 'SESSION_NOT_FOUND' });
  expect(sent(h, 'debit', bet.transaction_id)).toBe(0);
});

it('a win queued while the wallet breaker is open is acknowledged only once a replica has it', async () => {
  const h = await gatewayOn(1);
  const { sessionId } = await launch(h);
  const round = uniqueId('r');
  const betId = uniqueId('b');
  expect((await engine(h, `/sessions/${sessionId}/bet`, { round_id: round, transaction_id: betId, amount: '1.00' })).status).toBe(200);
  await createBreakerStore(h.redis, h.keys, BREAKER_POLICY).report('open', Date.now(), 'test');
  await waitFor('the gateway sees the breaker open', async () => ((await (await fetch(`${h.url}/readyz`)).json()) as { checks?: { wallet?: string } }).checks?.wallet === 'open');

  await replica.kill();
  const winId = uniqueId('w');
  const waitsBefore = await waitCalls();
  const win = await engine(h, `/sessions/${sessionId}/win`, { round_id: round, transaction_id: winId, bet_transaction_id: betId, amount: '3.00' });
  expect({ status: win.status, code: codeOf(win) }).toEqual({ status: 503, code: 'NOT_DURABLE' });
  expect(await waitCalls()).toBeGreaterThan(waitsBefore);
  expect(await h.transactions.get(winId)).toMatchObject({ state: 'pending', queued: true });

  await replica.start();
  await primary.waitForReplicas(1);
  const again = await engine(h, `/sessions/${sessionId}/win`, { round_id: round, transaction_id: winId, bet_transaction_id: betId, amount: '3.00' });
  expect(again.status).toBe(202);
  expect(sent(h, 'credit', winId)).toBe(0);
});

it('an `end` that decides its token\'s terminate sends it only once a replica has the decision', async () => {
  const h = await gatewayOn(1);
  const { sessionId, token } = await launch(h);
  const terminates = (): number => h.sim.calls().filter((c) => c.operation === 'terminate' && c.body?.token === token).length;
  await replica.kill();
  const ending = await engine(h, `/sessions/${sessionId}/end`, {});
  expect({ status: ending.status, code: codeOf(ending) }).toEqual({ status: 503, code: 'NOT_DURABLE' });
  expect(terminates()).toBe(0);
  await replica.start();
  await primary.waitForReplicas(1);
  // The repeat takes the decision's lease again and sends the terminate, once.
  const again = await engine(h, `/sessions/${sessionId}/end`, {});
  expect({ status: again.status, state: (again.body as { state: string }).state }).toEqual({ status: 200, state: 'succeeded' });
  expect(terminates()).toBe(1);
});

it('sends no WAIT with REDIS_MIN_REPLICAS=0', async () => {
  const h = await gatewayOn(0);
  const before = await waitCalls();
  const { sessionId } = await launch(h);
  const round = uniqueId('r');
  const bet = await engine(h, `/sessions/${sessionId}/bet`, { round_id: round, transaction_id: uniqueId('b'), amount: '1.00' });
  expect(bet.status).toBe(200);
  expect(await waitCalls()).toBe(before);
});
