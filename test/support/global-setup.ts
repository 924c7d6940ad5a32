import { ensureRedis, type AvailableRedis } from '../../src/lib/redis-server';

/**
 * Finds a Redis at REDIS_URL or starts one from redis-server on a free port; the test workers
 * inherit REDIS_URL. Shared by the projects that need Redis (int, e2e): it runs once per jest run.
 */
export default async function globalSetup(): Promise<void> {
  const holder = globalThis as { __testRedis?: AvailableRedis };
  if (holder.__testRedis !== undefined) return;
  const redis = await ensureRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  process.env.REDIS_URL = redis.url;
  holder.__testRedis = redis;
}
