import { ConfigError, loadWorkerConfig } from '../src/config/env';
import { createLogger } from '../src/observability/logger';
import { startWorker, type RunningWorker } from './worker';

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

  // The BullMQ workers take jobs as soon as they exist, before the start has finished.
  const starting = startWorker({ config, logger });

  // SIGTERM/SIGINT: finish the jobs in hand, take no new one, then close everything once. Listened
  // for from the start on: a signal during it stops the worker as soon as it has its handle,
  // instead of killing it in the middle of a wallet call.
  let stopping = false;
  const close = (worker: RunningWorker): void => {
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
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'worker stopping');
    // A start that fails is reported by main's own catch.
    starting.then(close, () => undefined);
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
  await starting;
}

main().catch((err: unknown) => {
  process.stderr.write(`worker failed to start: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
