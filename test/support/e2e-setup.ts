import globalSetup from './global-setup';
import { ensureChromium, ensureRedisServer } from './system-packages';

/** The e2e project: a Redis that answers (as for int), plus Chromium and redis-server (sentinels run as `redis-server --sentinel`) installed when missing. */
export default async function e2eSetup(): Promise<void> {
  ensureRedisServer();
  ensureChromium();
  await globalSetup();
}
