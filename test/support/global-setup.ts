import { ensureRedis } from './redis-server';

/** Finds a Redis at REDIS_URL or starts one from redis-server on a free port; workers inherit REDIS_URL. */
export default async function globalSetup(): Promise<void> {
  const redis = await ensureRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  process.env.REDIS_URL = redis.url;
  (globalThis as { __testRedis?: typeof redis }).__testRedis = redis;
}
