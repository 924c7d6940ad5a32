import { createHash } from 'node:crypto';
import Redis from 'ioredis';
import request from 'supertest';
import { SentinelTopology } from '../../src/lib/redis-sentinel';
import { waitFor } from '../../src/lib/wait-for';
import { loadLua } from '../../src/store/scripts';
import { engine, launch, startHarness, uniqueId, type Harness } from '../support/gateway-harness';

/**
 * The gateway on a Sentinel-managed primary (REDIS_SENTINELS, ioredis's own Sentinel support): the
 * primary is killed, the sentinels promote a replica, the gateway follows it, its Lua scripts are
 * loaded there again (NOSCRIPT → EVAL), and /readyz names the new primary.
 */
jest.setTimeout(90_000);

let topology: SentinelTopology;
let h: Harness | undefined;

beforeAll(async () => {
  topology = await SentinelTopology.start({ replicas: 2, sentinels: 3 });
});

afterAll(async () => {
  await h?.close();
  await topology?.stop();
});

async function readyPrimary(harness: Harness): Promise<string | undefined> {
  const res = await request(harness.url).get('/readyz');
  return (res.body as { redis_primary?: string }).redis_primary;
}

it('follows the promoted replica after the primary is killed, with its scripts reloaded there', async () => {
  h = await startHarness({
    label: 'sentinel',
    env: { REDIS_SENTINELS: topology.sentinelAddresses, REDIS_SENTINEL_NAME: topology.name, REDIS_MIN_REPLICAS: '1', LOG_LEVEL: 'silent' },
  });
  const harness = h;
  const first = await topology.primaryAddress();
  expect(await readyPrimary(harness)).toBe(first);
  const { sessionId } = await launch(harness);
  const round = uniqueId('r');
  const betId = uniqueId('b');
  expect((await engine(harness, `/sessions/${sessionId}/bet`, { round_id: round, transaction_id: betId, amount: '1.00' })).status).toBe(200);

  const { promoted } = await topology.killPrimary();
  expect(promoted).not.toBe(first);

  // Answers during the switch may be 500/503 (safe to repeat): the engine repeats the same body.
  const win = { round_id: round, transaction_id: uniqueId('w'), bet_transaction_id: betId, amount: '2.00' };
  const answer = await waitFor(
    'the win to be answered on the new primary',
    async () => {
      const res = await engine(harness, `/sessions/${sessionId}/win`, win);
      return res.status === 200 ? (res.body as { state: string }) : false;
    },
    // The sentinels' failover plus the client's reconnect; slower on a loaded 2-core box.
    60_000,
    { intervalMs: 200 },
  );
  expect(answer.state).toBe('succeeded');
  expect(harness.sim.calls().filter((c) => c.operation === 'credit')).toHaveLength(1);

  const sha = createHash('sha1').update(loadLua('claim-11')).digest('hex');
  const [host, port] = promoted.split(':') as [string, string];
  const onPromoted = new Redis({ host, port: Number(port) });
  try {
    expect(await onPromoted.script('EXISTS', sha)).toEqual([1]);
  } finally {
    onPromoted.disconnect();
  }
  expect(await waitFor('/readyz to name the new primary', async () => (await readyPrimary(harness)) === promoted, 10_000, { intervalMs: 200 })).toBe(true);
}, 120_000);
