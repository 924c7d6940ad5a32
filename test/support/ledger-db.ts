import { ownLedgerDb, type OwnLedgerDb } from '../../src/ledger/own-database';

/** The test's own ledger database: on the server at DATABASE_URL when it is set, else an embedded PGlite. */
export type TestLedgerDb = OwnLedgerDb;

export const testLedgerDb = (): Promise<TestLedgerDb> => ownLedgerDb(process.env.DATABASE_URL, 'wgwtest_ledger');
