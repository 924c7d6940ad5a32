import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { spawnEmbeddedPostgres } from './embedded';

/**
 * A PostgreSQL database of a run's own (the tests, the soak): a fresh database on the server at
 * `serverUrl` when one is given (dropped after), else an embedded PGlite in a temporary directory
 * (removed after), in a child process of its own.
 */
export interface OwnLedgerDb {
  readonly url: string;
  /** Where the data came from, for a test's name or a report. */
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

/** `namePrefix`: the database's name before its random part (lower case, digits and `_`). */
export async function ownLedgerDb(serverUrl: string | undefined, namePrefix: string): Promise<OwnLedgerDb> {
  if (serverUrl !== undefined && serverUrl !== '') {
    const name = `${namePrefix}_${randomBytes(5).toString('hex')}`;
    await admin(serverUrl, `CREATE DATABASE ${name}`);
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    return {
      url: url.toString(),
      kind: 'server',
      close: () => admin(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
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
