import { z } from 'zod';
import { ConfigError } from '../lib/config-error';
import { openLedgerDb } from '../ledger/db';
import { migrate } from '../ledger/migrate';

/**
 * `npm run migrate`: applies the ledger's pending migrations to DATABASE_URL and exits (workers
 * also apply them at start; the advisory lock lets one process at a time do it).
 */
async function main(): Promise<void> {
  const parsed = z.object({ DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//) }).safeParse(process.env);
  if (!parsed.success) throw new ConfigError('invalid configuration:\n  DATABASE_URL: must start with postgres:// or postgresql:// (missing or malformed; the value is not shown)');
  const db = openLedgerDb(parsed.data.DATABASE_URL, { max: 1 });
  try {
    const applied = await migrate(db);
    console.log(applied.length === 0 ? 'ledger schema current: nothing to apply' : `applied: ${applied.join(', ')}`);
  } finally {
    await db.end();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof ConfigError ? err.message : `migrate failed: ${(err as Error).message}`);
  process.exit(1);
});
