import { failureOf, lastLine, runSoak, SOAK_TEST_TIMEOUT_MS } from './soak-run';

/**
 * A short `npm run soak -- --ledger-outage` (contract 12): the ledger on a PostgreSQL of the run's
 * own (DATABASE_URL's server, else an embedded PGlite), its connection cut for 3 s mid-run while a
 * gateway or worker is killed and Redis restarted. Nothing is lost, doubled or drifted, and once the
 * outbox drained the ledger holds every record's final state once, every change, and agrees with
 * the wallet's books.
 */
jest.setTimeout(SOAK_TEST_TIMEOUT_MS);

it('ends with the ledger equal to the records and the wallet after its connection was cut mid-run', async () => {
  const run = await runSoak(['--players', '8', '--rounds', '5', '--kills', '1', '--pauses', '0', '--redis-restarts', '1', '--settle-timeout-ms', '40000', '--ledger-outage', '3', '--seed', '7']);
  expect(failureOf(run)).toBe('');
  const outage = /^ledger outage: .*cut for (\d+\.\d) s at 40 % of the script; outbox peak (\d+) entries.*; outbox drained/m.exec(run.stdout);
  expect(outage).not.toBeNull();
  expect(Number(outage?.[1])).toBeGreaterThanOrEqual(3);
  // The engine played on while PostgreSQL was away: changes waited in the outbox.
  expect(Number(outage?.[2])).toBeGreaterThan(0);
  const ledgerLines = run.stdout.split('\n').filter((line) => line.startsWith('ledger: ') || line.startsWith('  ! ledger-'));
  expect(ledgerLines).toEqual([expect.stringMatching(/^ledger: equal \([1-9]\d* records in Redis, [1-9]\d* in the ledger with [1-9]\d* changes; /)]);
  expect(run.stdout).toMatch(/^differences: none$/m);
  expect(lastLine(run.stdout)).toBe('lost: 0, doubled: 0, drift: 0');
});
