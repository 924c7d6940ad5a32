import { failureOf, lastLine, runSoak, SOAK_TEST_TIMEOUT_MS } from './soak-run';

/**
 * A short `npm run soak`: 2 gateways, 2 workers, Redis with AOF; wallet faults (late debits and
 * terminate failures included), SIGKILLs of a gateway or worker and one Redis restart while the
 * engine plays, ends sessions while wins are pending or in flight, ends the older of two sessions
 * on a token and refunds other rounds' bets. Nothing acknowledged is lost, nothing is applied
 * twice, no balance drifts, and every token is terminated.
 */
jest.setTimeout(SOAK_TEST_TIMEOUT_MS);

it('keeps every acknowledged win and compensation through kills, a worker paused past its lock and a Redis restart', async () => {
  const run = await runSoak(['--players', '10', '--rounds', '6', '--kills', '2', '--pauses', '1', '--redis-restarts', '1', '--seed', '5']);
  expect(failureOf(run)).toBe('');
  expect(run.stdout).toMatch(/^kills: 2 /m);
  expect(run.stdout).toMatch(/redis restarts: 1, worker pauses past the lock: 1$/m);
  expect(run.stdout).toMatch(
    /^interleavings met: end-while-win-pending \d+, end-while-win-in-flight \d+, end-older-session \d+, foreign-refund \d+, win-before-bet-answer \d+, refund-win-pair \d+, relaunch-repeat \d+, operator-resolution \d+, currency-relaunch \d+, worker-paused-past-lock \d+$/m,
  );
  const tokens = /tokens terminated (\d+) of (\d+)/.exec(run.stdout);
  // On failure, the checker's findings (a token not terminated with what holds it, a record not final…).
  const differences = run.stdout.split('\n').filter((line) => line.startsWith('  - ')).slice(0, 10);
  expect({ terminated: tokens?.[1], differences }).toEqual({ terminated: tokens?.[2], differences: [] });
  expect(lastLine(run.stdout)).toBe('lost: 0, doubled: 0, drift: 0');
});
