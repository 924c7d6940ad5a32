import { failureOf, lastLine, runEntry } from './soak-run';

/**
 * `npm run demo` end to end: Redis, the simulator in seeded chaos, one gateway and one worker as
 * real processes; the scripted engine plays and the checker reconciles.
 * Relaunches reuse the token and rounds are closed after open wins: the sequences of the defects
 * in docs/reliability.md, fixed and pinned by test/int/soak-findings.regression.int.test.ts.
 */
jest.setTimeout(180_000);

it('plays 3 players × 5 rounds in chaos and reconciles with no difference', async () => {
  const run = await runEntry('demo', ['--players', '3', '--rounds', '5', '--seed', '11']);
  expect(failureOf(run)).toBe('');
  expect(run.stdout).toContain('seed: 11');
  expect(run.stdout).toContain('differences: none');
  expect(run.stdout).toMatch(/^per player:/m);
  expect(lastLine(run.stdout)).toBe('lost: 0, doubled: 0, drift: 0');
});
