import { mkdirSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';

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
