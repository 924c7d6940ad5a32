import { ConfigError, loadWorkerConfig } from '../src/config/env';
import { createLogger } from '../src/observability/logger';
import { startWorker } from './worker';

/** `npm run worker`: one background worker process; any number may run at once. */
async function main(): Promise<void> {
  let config;
  try {
    config = loadWorkerConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const logger = createLogger({ level: config.LOG_LEVEL, name: 'worker' });
  const worker = await startWorker({ config, logger });

  // SIGTERM/SIGINT: finish the jobs in hand, take no new one, then close everything once.
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'worker stopping');
    worker.close().then(
      () => {
        logger.flush();
        process.exit(0);
      },
      (err: unknown) => {
        logger.error({ err }, 'worker did not stop cleanly');
        logger.flush();
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}

main().catch((err: unknown) => {
  process.stderr.write(`worker failed to start: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
