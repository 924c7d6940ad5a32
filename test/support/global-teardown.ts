import type { RunningRedis } from './redis-server';

export default async function globalTeardown(): Promise<void> {
  await (globalThis as { __testRedis?: RunningRedis }).__testRedis?.stop();
}
