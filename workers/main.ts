import { loadWorkerConfig } from '../src/config/env';
import { runUntilSignal, type Running } from '../src/lib/lifecycle';
import { createBusyLogger } from '../src/observability/logger';
import { startWorker } from './worker';

/**
 * `npm run worker`: one background worker process; any number may run at once. SIGTERM/SIGINT:
 * the jobs in hand finish, no new one starts, then everything closes once (runUntilSignal). SIGHUP:
 * WALLETS_FILE is read again (contract 11).
 */
async function start(): Promise<Running> {
  const config = loadWorkerConfig();
  const logger = createBusyLogger({ level: config.LOG_LEVEL, name: 'worker', traced: config.tracing !== undefined });
  // The BullMQ workers take jobs as soon as they exist, before the start has finished; a signal
  // during the start stops the worker as soon as it has its handle.
  const worker = await startWorker({ config, logger });
  return {
    async reload() {
      const result = await worker.reload();
      if (!result.ok) logger.warn({ signal: 'SIGHUP', error: result.error }, 'registry reload refused');
    },
    close: () => worker.close(),
    onSignal: (signal) => logger.info({ signal }, 'worker stopping'),
    onStopped: (err) => {
      if (err !== undefined) logger.error({ err }, 'worker did not stop cleanly');
    },
    beforeExit: () => logger.flush(),
  };
}

runUntilSignal('worker', start, { reloadOnHangup: true });
