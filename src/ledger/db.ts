import { Pool, types } from 'pg';

/**
 * The ledger's PostgreSQL connections: node-postgres (`pg`), the driver most Node PostgreSQL code
 * stands on (plain SQL, parameters, transactions, a pool; no query builder to learn), and the one
 * PGlite's socket server is known to speak to. Values come back as text where exactness matters:
 * `numeric` and `int8` stay strings (pg's default), timestamps are read as epoch milliseconds in
 * the queries themselves.
 */
export type LedgerDb = Pool;

// jsonb stays text: the error object goes through the lossless JSON of the answers.
types.setTypeParser(types.builtins.JSONB, (text: string) => text);

export interface LedgerDbOptions {
  /** Connections at most. */
  readonly max?: number;
  /** Per-statement limit: a slow ledger is an outage to the writer, never a hang. */
  readonly statementTimeoutMs?: number;
}

export function openLedgerDb(url: string, options: LedgerDbOptions = {}): LedgerDb {
  const pool = new Pool({
    connectionString: url,
    max: options.max ?? 4,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
    statement_timeout: options.statementTimeoutMs ?? 30_000,
    application_name: 'wallet-gateway-ledger',
  });
  // An idle connection the server drops must not crash the process: the next query reconnects.
  pool.on('error', () => undefined);
  // Nor one dropped while its client is checked out (a batch's transaction, the migrations' lock):
  // node-postgres reports it as an 'error' event on that client, which the pool listens to only
  // while the client is idle. The statement in flight, or the next, fails instead, and its caller
  // tries again.
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}
