import { createInFlightCap, PRESENCE_MS } from '../../src/duties/in-flight-cap';
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
let redis: RedisClient;

beforeAll(() => {
  redis = createRedis(redisUrl());
});

afterAll(async () => {
  await closeRedis(redis);
  await deletePrefix(prefix);
});

it('a process takes slots up to its share of the cap and no more; a slot given back can be taken again', async () => {
  const cap = createInFlightCap({ redis, key: `${key}-alone`, maxInFlight: 3 });
  cap.start();
  try {
    await waitFor('counted', async () => (await redis.zcard(`${key}-alone`)) === 1);
    expect([cap.tryTake(), cap.tryTake(), cap.tryTake(), cap.tryTake()]).toEqual([true, true, true, false]);
    cap.give();
    expect(cap.tryTake()).toBe(true);
  } finally {
    await cap.close();
  }
});

it('the cap is shared by the live processes; one that stops leaves at once, one killed when its presence runs out', async () => {
  const a = createInFlightCap({ redis, key, maxInFlight: 4 });
  const b = createInFlightCap({ redis, key, maxInFlight: 4 });
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
  const caps = [0, 1, 2].map(() => createInFlightCap({ redis, key: `${key}-low`, maxInFlight: 2 }));
  caps.forEach((cap) => cap.start());
  try {
    await waitFor('three counted', async () => (await redis.zcard(`${key}-low`)) === 3 && caps.every((cap) => cap.share() === 1), 5_000);
    expect(caps.map((cap) => [cap.tryTake(), cap.tryTake()])).toEqual([[true, false], [true, false], [true, false]]);
  } finally {
    await Promise.all(caps.map((cap) => cap.close()));
  }
});
