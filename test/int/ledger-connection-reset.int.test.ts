import { openLedgerDb, type LedgerDb } from '../../src/ledger/db';
import { proxiedLedgerDb, type ProxiedLedgerDb } from '../support/ledger-db';

/**
 * The ledger's connection dropped while a client is checked out of the pool (a batch's transaction
 * in flight, the migrations' lock held): the statement fails and the writer tries again later. The
 * soak's cut of the ledger's connection found workers ended by it instead: node-postgres reports the
 * drop as an 'error' event on that client, and a checked-out client had no listener.
 */
let ledger: ProxiedLedgerDb;
let db: LedgerDb;

beforeAll(async () => {
  ledger = await proxiedLedgerDb();
  db = openLedgerDb(ledger.url, { max: 2 });
}, 60_000);

afterAll(async () => {
  await db?.end();
  await ledger?.close();
});

it('fails the statement of a checked-out client whose connection drops, and the pool serves again once it is back', async () => {
  const client = await db.connect();
  await client.query('BEGIN');
  const inFlight = client.query('SELECT pg_sleep(1)');
  ledger.proxy.cut();
  await expect(inFlight).rejects.toThrow(/Connection terminated unexpectedly|ECONNRESET/);
  await expect(client.query('SELECT 1')).rejects.toThrow();
  client.release(new Error('connection dropped'));
  ledger.proxy.restore();
  const { rows } = await db.query<{ one: number }>('SELECT 1 AS one');
  expect(rows).toEqual([{ one: 1 }]);
});
