import Redis from 'ioredis';
import { RedisServer } from '../../src/lib/redis-server';
import { waitFor } from '../../src/lib/wait-for';
import { Code } from '../../src/wallet/codes';
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

const harness = async (): Promise<Harness> => {
  h = await startHarness({ label: 'worker-durable', env: { REDIS_URL: primary.url, REDIS_MIN_REPLICAS: '1', REDIS_WAIT_MS: '200' } });
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
