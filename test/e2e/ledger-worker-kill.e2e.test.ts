import { Pool } from 'pg';
import type { Child } from '../../src/lib/child';
import { waitFor } from '../../src/lib/wait-for';
import { openLedgerDb } from '../../src/ledger/db';
import { LEDGER_GROUP } from '../../src/ledger/drain';
import { migrate } from '../../src/ledger/migrate';
import { ensureMonths } from '../../src/ledger/partitions';
import { testLedgerDb, type TestLedgerDb } from '../support/ledger-db';
import { startWorkerProcess } from '../support/processes';
import { startHarness, type Harness } from '../support/worker-harness';

/**
 * A worker process SIGKILLed with a batch of the ledger outbox in hand that it could not write
 * (PostgreSQL refusing its rows), nothing acknowledged: another worker process takes the batch over
 * (XAUTOCLAIM) and the ledger ends with every change once, none missing (contract 12). The other
 * order — rows committed, the worker killed before its XACK — is ledger-outbox.int.test.ts's.
 */
let ledger: TestLedgerDb;
let db: Pool;
let h: Harness;
const children: Child[] = [];

beforeAll(async () => {
  ledger = await testLedgerDb();
  db = openLedgerDb(ledger.url, { max: 2 });
  await migrate(db);
  await ensureMonths(db, [Date.now()]);
  h = await startHarness({ label: 'ledger-kill', env: { DATABASE_URL: ledger.url, LEDGER_CLAIM_IDLE_MS: '1000' } });
}, 60_000);

afterAll(async () => {
  await Promise.all(children.splice(0).map((c) => c.kill('SIGKILL')));
  await h?.close();
  await db?.end();
  await ledger?.close();
});

const outboxKey = (): string => h.store.layout.keys(0).ledgerOutbox();
const pendingCount = async (): Promise<number> => ((await h.redis.xpending(outboxKey(), LEDGER_GROUP)) as [number])[0];

it('a worker killed with an unwritten batch in hand: the next worker writes it, every change once', async () => {
  const player = await h.newPlayer();
  const bets = [];
  for (let i = 0; i < 300; i += 1) bets.push(await h.bet(player, '0.01'));
  const expected = bets.length * 2;
  expect(await h.redis.xlen(outboxKey())).toBe(expected);

  // Every row refused while the first worker runs: it reads a batch, cannot write it, holds it.
  await db.query('ALTER TABLE ledger_changes ADD CONSTRAINT refuse_all CHECK (change_no < 0)');
  const first = await startWorkerProcess(h.env);
  children.push(first);
  await waitFor('a batch taken by the first worker, not acknowledged', async () => ((await pendingCount()) > 0 ? true : undefined), 30_000);
  await first.kill('SIGKILL');
  await db.query('ALTER TABLE ledger_changes DROP CONSTRAINT refuse_all');

  children.push(await startWorkerProcess(h.env));
  await waitFor('the outbox drained by the second worker', async () => ((await pendingCount()) === 0 && (await h.redis.xlen(outboxKey())) === 0 ? true : undefined), 30_000);
  const { rows } = await db.query<{ n: string; distinct_changes: string; bets: string; max_change: number }>(
    `SELECT count(*)::text AS n, count(DISTINCT (transaction_id, change_no))::text AS distinct_changes,
            count(DISTINCT transaction_id)::text AS bets, max(change_no) AS max_change FROM ledger_changes`,
  );
  expect(rows[0]).toEqual({ n: String(expected), distinct_changes: String(expected), bets: String(bets.length), max_change: 2 });
}, 120_000);
