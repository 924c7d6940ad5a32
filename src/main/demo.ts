import { freshSeed, parseSizes, usage, UsageError, type Sizes } from '../soak/cli';
import { runScenario } from '../soak/run';

/**
 * `npm run demo`: a scripted engine plays rounds through one gateway and one worker against the
 * simulator in seeded chaos mode, then prints the reconciliation ending in
 * `lost: N, doubled: N, drift: N` (exit 1 unless all three are 0). Flags: --players, --rounds, --seed.
 */
const DEFAULTS: Sizes = {
  seed: freshSeed(),
  players: 5,
  rounds: 20,
  concurrency: 5,
  gateways: 1,
  workers: 1,
  chaosRate: 0.2,
  kills: 0,
  redisRestarts: 0,
  walletFaultEveryMs: 0,
  walletTimeoutMs: 1500,
  settleTimeoutMs: 120_000,
  keepLogs: false,
  logLevel: 'info',
};

async function main(): Promise<number> {
  const sizes = parseSizes(process.argv.slice(2), DEFAULTS);
  if (sizes === 'help') {
    console.log(usage('npm run demo --', DEFAULTS));
    return 0;
  }
  const result = await runScenario({
    ...sizes,
    title: 'Demo reconciliation',
    aof: false,
    perPlayer: true,
    out: (line) => console.log(line),
    err: process.stderr,
  });
  return result.exitCode;
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(err instanceof UsageError ? `${err.message}\n${usage('npm run demo --', DEFAULTS)}\n` : `demo failed: ${err instanceof Error ? err.stack : String(err)}\n`);
      process.exit(2);
    },
  );
}
