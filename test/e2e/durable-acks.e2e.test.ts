import Redis from 'ioredis';
import { RedisServer } from '../../src/lib/redis-server';
import { engine, launch, startHarness, uniqueId, type Harness } from '../support/gateway-harness';

/**
 * Contract 9 on a private primary with one replica: with REDIS_MIN_REPLICAS=1 an answer leaves only
 * once the replica acknowledged its writes; with the replica down the engine gets 503 NOT_DURABLE,
 * and the same request repeated once the replica is back gets the stored answer (one wallet call).
 * The same for `end`. With REDIS_MIN_REPLICAS=0 (the default) no WAIT is sent at all.
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

async function gatewayOn(minReplicas: number): Promise<Harness> {
  const h = await startHarness({ label: 'durable', env: { REDIS_URL: primary.url, REDIS_MIN_REPLICAS: String(minReplicas), REDIS_WAIT_MS: '200', LOG_LEVEL: 'silent' } });
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

it('answers once a replica acknowledged; NOT_DURABLE without one; the repeat gets the stored answer', async () => {
  const h = await gatewayOn(1);
  const { sessionId } = await launch(h);
  const round = uniqueId('r');
  const bet = await engine(h, `/sessions/${sessionId}/bet`, { round_id: round, transaction_id: uniqueId('b'), amount: '1.00' });
  expect(bet.status).toBe(200);
  expect(await waitCalls()).toBeGreaterThan(0);

  await replica.kill();
  const win = { round_id: round, transaction_id: uniqueId('w'), bet_transaction_id: (bet.body as { transaction_id: string }).transaction_id, amount: '2.50' };
  const first = await engine(h, `/sessions/${sessionId}/win`, win);
  expect({ status: first.status, code: (first.body as { error?: { code: string } }).error?.code }).toEqual({ status: 503, code: 'NOT_DURABLE' });

  await replica.start();
  await primary.waitForReplicas(1);
  const again = await engine(h, `/sessions/${sessionId}/win`, win);
  expect({ status: again.status, state: (again.body as { state: string }).state }).toEqual({ status: 200, state: 'succeeded' });
  expect(h.sim.calls().filter((c) => c.operation === 'credit')).toHaveLength(1);

  // `end` likewise: the ended session is promised only once a replica has it.
  await replica.kill();
  const ending = await engine(h, `/sessions/${sessionId}/end`, {});
  expect({ status: ending.status, code: (ending.body as { error?: { code: string } }).error?.code }).toEqual({ status: 503, code: 'NOT_DURABLE' });
  await replica.start();
  await primary.waitForReplicas(1);
  const ended = await engine(h, `/sessions/${sessionId}/end`, {});
  expect(ended.status).toBe(200);
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
