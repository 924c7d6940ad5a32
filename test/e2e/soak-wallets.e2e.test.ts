import { failureOf, lastLine, runSoak, SOAK_TEST_TIMEOUT_MS } from './soak-run';

/**
 * A short `npm run soak -- --wallets 2` (contract 11): two wallets of a generated WALLETS_FILE, each
 * its own simulator with its own credentials and signature, the same player, token, round and
 * transaction ids in both; one wallet down for a few seconds while the other plays, a gateway or
 * worker killed. Each wallet reconciles against its own books, and so does the sum.
 */
jest.setTimeout(SOAK_TEST_TIMEOUT_MS);

it('keeps two wallets apart, and the one that was down loses nothing', async () => {
  const run = await runSoak(['--wallets', '2', '--players', '8', '--rounds', '5', '--kills', '1', '--pauses', '0', '--redis-restarts', '0', '--outage', '6', '--settle-timeout-ms', '40000', '--seed', '3']);
  expect(failureOf(run)).toBe('');
  const lines = run.stdout.trimEnd().split('\n');
  // Seed 3 takes casino-b down (the seed modulo the wallets).
  expect(lines.slice(-3)).toEqual([
    expect.stringMatching(/^wallet casino-a \(HMAC-SHA256 hex, provider \d+\): lost: 0, doubled: 0, drift: 0; players 4, .*, differences 0$/),
    expect.stringMatching(/^wallet casino-b \(HMAC-SHA512 base64, provider \d+, down 6 s\): lost: 0, doubled: 0, drift: 0; players 4, .*, differences 0$/),
    'lost: 0, doubled: 0, drift: 0',
  ]);
  expect(run.stdout).toMatch(/^outage: wallet casino-b down 6 s; dead records after it: 0;/m);
  // The same ids in both wallets, and a lookup that does not say which is told so.
  expect(run.stdout).toMatch(/^ids in several wallets: 4 players \(tokens and rounds with them\), [1-9]\d* transactions with a record in each; a lookup of \S+ without \?wallet= answered 409 AMBIGUOUS_TRANSACTION$/m);
  const tokens = /tokens terminated (\d+) of (\d+)/.exec(run.stdout);
  const differences = lines.filter((line) => line.startsWith('  - ')).slice(0, 10);
  expect({ terminated: tokens?.[1], differences }).toEqual({ terminated: tokens?.[2], differences: [] });
  expect(lastLine(run.stdout)).toBe('lost: 0, doubled: 0, drift: 0');
});
