import { Child, tsEntry } from '../../src/lib/child';

/**
 * The project's entries as real child processes for the e2e tests (lib/child: each leads its own
 * process group, its output kept in memory), with this process's environment plus `env`.
 */
export async function spawnEntry(entry: string, env: Record<string, string>): Promise<Child> {
  const child = new Child({ name: entry, args: tsEntry(entry), env: { ...process.env, ...env } });
  await child.start();
  return child;
}

/** Starts `npm run worker`'s entry (workers/main.ts) and waits until it took its queues. */
export async function startWorkerProcess(env: Record<string, string>): Promise<Child> {
  const child = await spawnEntry('workers/main.ts', { ...env, LOG_LEVEL: 'info' });
  await child.waitForOutput('"msg":"worker started"');
  return child;
}
