import { lastLine, runEntry } from './soak-run';

/**
 * A short `npm run soak`: 2 gateways, 2 workers, Redis with AOF; wallet faults, SIGKILLs of a
 * gateway or worker and one Redis restart while the engine plays. Nothing acknowledged is lost,
 * nothing is applied twice, no balance drifts.
 */
jest.setTimeout(240_000);

it('keeps every acknowledged win and compensation through kills and a Redis restart', async () => {
  const run = await runEntry('soak', ['--players', '10', '--rounds', '6', '--kills', '2', '--redis-restarts', '1', '--seed', '5']);
  expect({ code: run.code, tail: run.stdout.split('\n').slice(-15).join('\n'), output: run.code === 0 ? '' : run.output.slice(-2000) }).toMatchObject({ code: 0 });
  expect(run.stdout).toMatch(/^kills: 2 /m);
  expect(run.stdout).toMatch(/redis restarts: 1$/m);
  expect(lastLine(run.stdout)).toBe('lost: 0, doubled: 0, drift: 0');
});
