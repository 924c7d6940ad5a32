import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { Client } from 'pg';
import { tsEntry } from '../../src/lib/child';

/**
 * A PostgreSQL database of the test's own: a fresh database on the server at DATABASE_URL when it
 * is set (dropped after), else an embedded PGlite in a temporary directory (removed after), in a
 * child process (embedded-postgres-main.ts).
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
  const child = spawn(process.execPath, [...tsEntry(join(__dirname, 'embedded-postgres-main.ts')), join(dir, 'pgdata')], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  const exited = once(child, 'exit');
  const [url] = (await Promise.race([once(createInterface({ input: child.stdout! }), 'line'), exited.then(() => [undefined])])) as [string | undefined];
  if (url === undefined) throw new Error('the embedded PostgreSQL did not start');
  return {
    url,
    kind: 'embedded',
    async close() {
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
