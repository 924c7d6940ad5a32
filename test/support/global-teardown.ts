import type { AvailableRedis } from '../../src/lib/redis-server';

export default async function globalTeardown(): Promise<void> {
  await (globalThis as { __testRedis?: AvailableRedis }).__testRedis?.stop();
}
