import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LedgerDb } from './db';

/**
 * Versioned SQL migrations (./migrations/NNNN_name.sql), each applied once, in order, in its own
 * transaction. One process at a time: a session-level advisory lock is held from reading the
 * applied versions to the last commit, so workers starting together apply each file once.
 */

const MIGRATIONS_DIR = join(__dirname, 'migrations');
const FILE = /^(\d{4})_[a-z0-9_]+\.sql$/;
/** The advisory lock's key: any constant the ledger alone uses ('wgw-ledg' as 8 bytes). */
export const MIGRATION_LOCK_KEY = '8603976650090439783';

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

export function migrations(dir: string = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((file) => FILE.test(file))
    .sort()
    .map((file) => ({ version: Number(FILE.exec(file)![1]), name: file, sql: readFileSync(join(dir, file), 'utf8') }));
}

/** Applies what is missing; returns the names applied now (empty when the schema was current). */
export async function migrate(db: LedgerDb, all: readonly Migration[] = migrations()): Promise<string[]> {
  const client = await db.connect();
  const applied: string[] = [];
  try {
    await client.query('SELECT pg_advisory_lock($1::bigint)', [MIGRATION_LOCK_KEY]);
    try {
      await client.query('CREATE TABLE IF NOT EXISTS ledger_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())');
      const done = new Set((await client.query<{ version: number }>('SELECT version FROM ledger_migrations')).rows.map((r) => r.version));
      for (const m of all) {
        if (done.has(m.version)) continue;
        await client.query('BEGIN');
        try {
          await client.query(m.sql);
          await client.query('INSERT INTO ledger_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK');
          throw new Error(`migration ${m.name} failed: ${(err as Error).message}`, { cause: err });
        }
        applied.push(m.name);
      }
    } finally {
      await client.query('SELECT pg_advisory_unlock($1::bigint)', [MIGRATION_LOCK_KEY]);
    }
  } finally {
    client.release();
  }
  return applied;
}
