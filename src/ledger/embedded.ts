import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { tsEntry } from '../lib/child';

/**
 * An embedded PostgreSQL for `npm run dev` and the tests when DATABASE_URL is unset: PGlite
 * (PostgreSQL compiled to WebAssembly, in this process) behind its socket server, so the ledger's
 * own driver code talks to it over the PostgreSQL wire protocol as it would to a server. Nothing
 * to install. Its one session serves every connection, one query at a time; a transaction, once
 * begun, holds it until its COMMIT or ROLLBACK.
 */
export interface EmbeddedPostgres {
  /** postgres://… of the socket server on loopback. */
  readonly url: string;
  close(): Promise<void>;
}

/** `dataDir`: where its files live (kept between runs); undefined: in memory. */
export async function startEmbeddedPostgres(dataDir?: string): Promise<EmbeddedPostgres> {
  if (dataDir !== undefined) mkdirSync(dataDir, { recursive: true });
  const db = await PGlite.create(dataDir);
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: 8 });
  try {
    await server.start();
  } catch (err) {
    await db.close();
    throw err;
  }
  return {
    url: `postgres://postgres@${server.getServerConn()}/postgres?sslmode=disable`,
    async close() {
      await server.stop();
      await db.close();
    },
  };
}

/**
 * The embedded PostgreSQL in a child process (src/main/embedded-postgres.ts, run with tsx): what
 * `npm run dev` and the tests use. `dataDir` is kept; close() stops the process.
 */
export async function spawnEmbeddedPostgres(dataDir: string): Promise<EmbeddedPostgres> {
  const child = spawn(process.execPath, [...tsEntry(join(__dirname, '..', 'main', 'embedded-postgres.ts')), dataDir], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  const exited = once(child, 'exit');
  const [url] = (await Promise.race([once(createInterface({ input: child.stdout! }), 'line'), exited.then(() => [undefined])])) as [string | undefined];
  if (url === undefined) throw new Error('the embedded PostgreSQL (PGlite) did not start');
  return {
    url,
    async close() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
