import { openLedgerDb, type LedgerDb } from '../../src/ledger/db';
import { createClosers, startWith } from '../../src/lib/lifecycle';
import { ownLedgerDb, type OwnLedgerDb } from '../../src/ledger/own-database';
import { proxyFor, type TcpProxy } from '../../src/lib/tcp-proxy';
import type { RunningWorker } from '../../workers/worker';
import { startHarness, type Harness, type HarnessOptions } from './worker-harness';

/** The test's own ledger database: on the server at DATABASE_URL when it is set, else an embedded PGlite. */
export type TestLedgerDb = OwnLedgerDb;

export const testLedgerDb = (): Promise<TestLedgerDb> => ownLedgerDb(process.env.DATABASE_URL, 'wgwtest_ledger');

/** The test's ledger database behind a TCP proxy the test can cut (every connection dropped, new ones refused) and restore. */
export interface ProxiedLedgerDb {
  readonly proxy: TcpProxy;
  /** The database's URL through the proxy. */
  readonly url: string;
  /** The database's own URL, past the proxy. */
  readonly directUrl: string;
  close(): Promise<void>;
}

export async function proxiedLedgerDb(): Promise<ProxiedLedgerDb> {
  const closers = createClosers();
  return startWith(closers, async () => {
    const ledger = await testLedgerDb();
    closers.defer('ledger database', () => ledger.close());
    const via = await proxyFor(ledger.url);
    closers.defer('ledger proxy', () => via.proxy.close());
    return { proxy: via.proxy, url: via.url, directUrl: ledger.url, close: closers.closeAll };
  });
}

export interface LedgerHarness {
  readonly h: Harness;
  /** The harness's first worker, its ledger drain ready. */
  readonly worker: RunningWorker;
  /** Between the harness (gateway and workers) and PostgreSQL: cut it to take the ledger away. */
  readonly proxy: TcpProxy;
  /** The test's own reads, past the proxy: they answer while it is cut. */
  readonly db: LedgerDb;
  close(): Promise<void>;
}

/** A harness whose gateway and workers keep a ledger in the test's own database, reached through a proxy the test can cut. */
export async function ledgerHarness(options: HarnessOptions): Promise<LedgerHarness> {
  const closers = createClosers();
  return startWith(closers, async () => {
    const ledger = await proxiedLedgerDb();
    closers.defer('ledger', () => ledger.close());
    const db = openLedgerDb(ledger.directUrl, { max: 2 });
    closers.defer('ledger pool', () => db.end());
    const h = await startHarness({ ...options, env: { ...options.env, DATABASE_URL: ledger.url } });
    closers.defer('harness', () => h.close());
    const worker = await h.startWorker();
    await worker.ledger!.ready;
    return { h, worker, proxy: ledger.proxy, db, close: closers.closeAll };
  });
}
