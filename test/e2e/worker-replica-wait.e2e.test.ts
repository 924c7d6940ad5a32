import Redis from 'ioredis';
import { RedisServer } from '../../src/lib/redis-server';
import { waitFor } from '../../src/lib/wait-for';
import { Code } from '../../src/wallet/codes';
import { openLedgerDb } from '../../src/ledger/db';
import { testLedgerDb } from '../support/ledger-db';
import { startHarness, type Harness } from '../support/worker-harness';

/**
 * Contract 9 in the worker, on a private primary with one replica and REDIS_MIN_REPLICAS=1: a
 * worker sends a retry or a terminate only once the replica has the write that decided it. A failed
 * primary that comes back as a primary for a moment takes writes its resync then drops (the
 * Sentinel soak met a compensation begun there whose rollback still went out); on this primary
 * with its replica down, WAIT answers 0 just as it would there. The worker sends nothing, and once
 * the replica is back the same work goes through, once.
 */
jest.setTimeout(60_000);

let primary: RedisServer;
let replica: RedisServer;
let h: Harness | undefined;
let replicaDown = false;

beforeAll(async () => {
  primary = await RedisServer.start();
  replica = await RedisServer.start({ replicaOf: { host: '127.0.0.1', port: primary.port } });
  await primary.waitForReplicas(1);
});

afterEach(async () => {
  await h?.close();
  h = undefined;
  if (replicaDown) await replicaBack();
});

afterAll(async () => {
  await replica?.stop();
  await primary?.stop();
});

async function replicaAway(): Promise<void> {
  await replica.kill();
  replicaDown = true;
}

async function replicaBack(): Promise<void> {
  await replica.start();
  await primary.waitForReplicas(1);
  replicaDown = false;
}

async function waitCalls(): Promise<number> {
  const client = new Redis(primary.url);
  try {
    const match = /^cmdstat_wait:calls=(\d+)/m.exec(await client.info('commandstats'));
    return match === null ? 0 : Number(match[1]);
  } finally {
    client.disconnect();
  }
}

const harness = async (env: Record<string, string> = {}): Promise<Harness> => {
  h = await startHarness({ label: 'worker-durable', env: { REDIS_URL: primary.url, REDIS_MIN_REPLICAS: '1', REDIS_WAIT_MS: '200', ...env } });
  return h;
};

it('sends a retry only once a replica has its start; with the replica back, the same credit goes through once', async () => {
  const h = await harness();
  const player = await h.newPlayer();
  const { id } = await h.winAfter(player, (creditId) => h.sim.faults.failNext('credit', 1, Code.UserOffline, { transactionId: creditId }));
  expect(await h.store.get(id)).toMatchObject({ state: 'pending', attempts: 1 });

  await replicaAway();
  const waitsBefore = await waitCalls();
  await h.startWorker();
  // The run counted its try on the primary and asked for the replica, which never answered.
  await waitFor('the retry counted and its WAIT answered', async () => (await h.store.get(id))!.attempts === 2 && (await waitCalls()) > waitsBefore, 20_000);
  expect(h.sim.calls().filter((c) => c.operation === 'credit' && c.transactionId === id)).toHaveLength(1);
  expect(h.sim.ledger.appliedCount(id)).toBe(0);

  await replicaBack();
  await h.inState(id, 'succeeded', 30_000);
  expect(h.sim.ledger.appliedCount(id)).toBe(1);
});

it('sends a terminate only once a replica has its decision', async () => {
  const h = await harness();
  const player = await h.newPlayer();
  h.sim.faults.failNext('terminate', 1, Code.UserOffline);
  expect((await h.endSession(player)).status).toBe(202);
  const terminates = () => h.tokenCalls(player).filter((op) => op === 'terminate').length;
  expect(terminates()).toBe(1);

  await replicaAway();
  const waitsBefore = await waitCalls();
  await h.startWorker();
  await waitFor('the terminate job asked for the replica', async () => (await waitCalls()) > waitsBefore, 20_000);
  expect(terminates()).toBe(1);
  expect(await h.sessions.isEnding(player.session.tokenRef)).toBe(true);

  await replicaBack();
  await waitFor('the token terminated', async () => !(await h.sessions.isEnding(player.session.tokenRef)), 30_000);
  expect(terminates()).toBe(2);
});

it('writes a change to the ledger only once a replica holds it (a change a failover loses never reaches the ledger)', async () => {
  const ledger = await testLedgerDb();
  const db = openLedgerDb(ledger.url, { max: 1 });
  try {
    const h = await harness({ DATABASE_URL: ledger.url });
    const worker = await h.startWorker();
    await worker.ledger!.ready;
    const player = await h.newPlayer();
    const changes = async (id: string): Promise<number> =>
      (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM ledger_changes WHERE transaction_id = $1', [id])).rows[0]!.n;

    await replicaAway();
    const waitsBefore = await waitCalls();
    const bet = await h.bet(player);
    const outbox = h.store.layout.keys(0).ledgerOutbox();
    // The drain read the bet's changes and asked for the replica more than once, never answered.
    await waitFor('the changes read, the replica asked again and again', async () => {
      const [pending] = (await h.redis.xpending(outbox, 'ledger')) as [number];
      return pending >= 2 && (await waitCalls()) > waitsBefore + 2;
    }, 30_000);
    expect(await changes(bet.transactionId)).toBe(0);

    await replicaBack();
    await waitFor('the claim and the settle in the ledger', async () => (await changes(bet.transactionId)) === 2, 30_000);
  } finally {
    await h?.close();
    h = undefined;
    await db.end();
    await ledger.close();
  }
});
