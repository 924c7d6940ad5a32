import { createInFlightCap, PRESENCE_MS } from '../../src/duties/in-flight-cap';
import { createMetrics, walletMetrics } from '../../src/observability/metrics';
import { waitFor } from '../../src/lib/wait-for';
import { keysFor } from '../../src/store/keys';
import { closeRedis, createRedis, type RedisClient } from '../../src/store/redis';
import { deletePrefix, redisUrl, testPrefix } from '../support/prefix';

/**
 * A wallet's max_in_flight shared out over the processes serving it (contract 11), counted by
 * presence in real Redis: each process's share follows the live count, a stopped process leaves at
 * once, and one killed (never renewing) stops counting when its presence runs out.
 */
const prefix = testPrefix('cap');
const key = keysFor(prefix).inFlightPresence();
const callsKey = keysFor(prefix).inFlightCalls();
/** A cap on the presence key `presence`, its calls open never counted. */
const capOn = (presence: string, maxInFlight: number) => createInFlightCap({ redis, keys: { presence, calls: `${presence}-calls` }, maxInFlight, openCalls: () => 0 });
let redis: RedisClient;

beforeAll(() => {
  redis = createRedis(redisUrl());
});

afterAll(async () => {
  await closeRedis(redis);
  await deletePrefix(prefix);
});

it('a process takes slots up to its share of the cap and no more; a slot given back can be taken again', async () => {
  const cap = capOn(`${key}-alone`, 3);
  cap.start();
  try {
    await waitFor('counted', async () => (await redis.zcard(`${key}-alone`)) === 1);
    expect([cap.tryTake('debit'), cap.tryTake('debit'), cap.tryTake('debit'), cap.tryTake('debit')]).toEqual([true, true, true, false]);
    cap.give();
    expect(cap.tryTake('debit')).toBe(true);
  } finally {
    await cap.close();
  }
});

it('the cap is shared by the live processes; one that stops leaves at once, one killed when its presence runs out', async () => {
  const a = capOn(key, 4);
  const b = capOn(key, 4);
  a.start();
  b.start();
  try {
    await waitFor('a and b share the cap', () => a.share() === 2 && b.share() === 2, 5_000);
    await b.close();
    await waitFor('a alone after b stopped', () => a.share() === 4, 5_000);

    // A process that counted itself and was killed: it never renews and never leaves.
    await redis.zadd(key, Date.now() + PRESENCE_MS, 'killed-process');
    await waitFor('the killed process counted', () => a.share() === 2, 5_000);
    await waitFor('the killed process no longer counted', () => a.share() === 4, PRESENCE_MS + 5_000);
  } finally {
    await a.close();
    await b.close();
  }
});

it('a cap lower than the number of processes still lets each one call, one at a time', async () => {
  const caps = [0, 1, 2].map(() => capOn(`${key}-low`, 2));
  caps.forEach((cap) => cap.start());
  try {
    await waitFor('three counted', async () => (await redis.zcard(`${key}-low`)) === 3 && caps.every((cap) => cap.share() === 1), 5_000);
    expect(caps.map((cap) => [cap.tryTake('debit'), cap.tryTake('debit')])).toEqual([[true, false], [true, false], [true, false]]);
  } finally {
    await Promise.all(caps.map((cap) => cap.close()));
  }
});

it('a refusal is counted by call under the wallet\'s label', async () => {
  const metrics = createMetrics({ defaultMetrics: false });
  const cap = createInFlightCap({ redis, keys: { presence: `${key}-refused`, calls: `${callsKey}-refused` }, maxInFlight: 1, openCalls: () => 0, metrics: walletMetrics(metrics, 'casino-b') });
  expect([cap.tryTake('debit'), cap.tryTake('debit'), cap.tryTake('inline'), cap.tryTake('retry'), cap.tryTake('retry')]).toEqual([true, false, false, false, false]);
  const text = await metrics.registry.metrics();
  expect(text).toContain('wallet_in_flight_refused_total{call="debit",wallet="casino-b"} 1');
  expect(text).toContain('wallet_in_flight_refused_total{call="inline",wallet="casino-b"} 1');
  expect(text).toContain('wallet_in_flight_refused_total{call="retry",wallet="casino-b"} 2');
  await cap.close();
});

it('the calls open over the deployment: each live process\'s as it last published them, its own now; a killed process\'s drop out with its presence', async () => {
  const keys = { presence: key, calls: callsKey };
  let openA = 0;
  let openB = 0;
  const a = createInFlightCap({ redis, keys, maxInFlight: 8, openCalls: () => openA });
  const b = createInFlightCap({ redis, keys, maxInFlight: 8, openCalls: () => openB });
  a.start();
  b.start();
  try {
    openA = 2;
    openB = 3;
    // a's own count is read live; b's once b renewed.
    await waitFor('b\'s 3 calls published', async () => (await a.deploymentCalls()) === 5, 5_000);
    openA = 1;
    expect(await a.deploymentCalls()).toBe(4);

    // A process killed with calls open: counted until its presence runs out, then gone with its calls.
    await redis.zadd(key, Date.now() + PRESENCE_MS, 'killed-process');
    await redis.hset(callsKey, 'killed-process', '7');
    expect(await a.deploymentCalls()).toBe(11);
    await waitFor('the killed process\'s calls dropped', async () => (await a.deploymentCalls()) === 4, PRESENCE_MS + 5_000);
    await waitFor('its entry removed at a renewal', async () => (await redis.hexists(callsKey, 'killed-process')) === 0, 5_000);

    // A process that stops leaves at once, its calls with it.
    await b.close();
    expect(await a.deploymentCalls()).toBe(1);
    expect(await redis.hlen(callsKey)).toBe(1);
  } finally {
    await a.close();
    await b.close();
  }
});
