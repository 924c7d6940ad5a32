import globalSetup from './global-setup';
import { ensureChromium, ensureRedisSentinel, ensureRedisServer } from './system-packages';

/** The e2e project: a Redis that answers (as for int), plus Chromium, redis-server and redis-sentinel installed when missing. */
export default async function e2eSetup(): Promise<void> {
  ensureRedisServer();
  ensureRedisSentinel();
  ensureChromium();
  await globalSetup();
}
