import { failureOf, lastLine, runSoak, SOAK_TEST_TIMEOUT_MS } from './soak-run';

/**
 * A short `npm run soak -- --topology sentinel`: a primary, 2 replicas and 3 sentinels (real
 * redis-server processes, the sentinels `redis-server --sentinel`: no redis-sentinel package is
 * needed), REDIS_MIN_REPLICAS 1; the primary is killed twice while the engine plays (a replica is
 * promoted each time), plus gateway/worker kills and wallet faults. Nothing acknowledged is lost,
 * nothing is applied twice, no balance drifts.
 */
jest.setTimeout(SOAK_TEST_TIMEOUT_MS);

it('keeps every acknowledged win and compensation through two primary failovers', async () => {
  const run = await runSoak(['--topology', 'sentinel', '--players', '10', '--rounds', '6', '--kills', '2', '--pauses', '0', '--redis-restarts', '2', '--settle-timeout-ms', '60000', '--seed', '7']);
  expect(failureOf(run)).toBe('');
  expect(run.stdout).toMatch(/^primary kills: 2 /m);
  expect(run.stdout).toMatch(/REDIS_MIN_REPLICAS 1/);
  // Every record read back and final, every token terminated: a gateway that lost its Redis for good
  // can still end lost 0 (the wallet's books agree) while answering 500 to everything.
  const differences = run.stdout.split('\n').filter((line) => line.startsWith('  - ')).slice(0, 10);
  expect(differences).toEqual([]);
  expect(lastLine(run.stdout)).toBe('lost: 0, doubled: 0, drift: 0');
});
