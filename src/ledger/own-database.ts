import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { spawnEmbeddedPostgres } from '../../src/ledger/embedded';

/**
 * A PostgreSQL database of the test's own: a fresh database on the server at DATABASE_URL when it
 * is set (dropped after), else an embedded PGlite in a temporary directory (removed after), in a
 * child process of its own.
 */
export interface TestLedgerDb {
  readonly url: string;
  /** Where the data came from, for the test's name. */
  readonly kind: 'server' | 'embedded';
  close(): Promise<void>;
}

async function admin(url: string, sql: string): Promise<void> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

export async function testLedgerDb(): Promise<TestLedgerDb> {
  const server = process.env.DATABASE_URL;
  if (server !== undefined && server !== '') {
    const name = `wgwtest_ledger_${randomBytes(5).toString('hex')}`;
    await admin(server, `CREATE DATABASE ${name}`);
    const url = new URL(server);
    url.pathname = `/${name}`;
    return {
      url: url.toString(),
      kind: 'server',
      close: () => admin(server, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
    };
  }
  const dir = mkdtempSync(join(tmpdir(), 'wgw-ledger-'));
  const embedded = await spawnEmbeddedPostgres(join(dir, 'pgdata'));
  return {
    url: embedded.url,
    kind: 'embedded',
    async close() {
      await embedded.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
