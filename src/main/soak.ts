import { freshSeed, parseSizes, usage, UsageError, type Sizes } from '../soak/cli';
import { runScenario } from '../soak/run';

/**
 * `npm run soak`: 2 gateways and 2 workers on Redis with AOF (fsync always); the seeded engine
 * script under the simulator's chaos plus the fault scheduler (wallet codes, applied-but-lost
 * answers, resets, slow answers, SIGKILLs of gateways and workers, Redis restarts on the same AOF).
 * The same checker and closing line as the demo; `--seed N` repeats a run.
 */
const DEFAULTS: Sizes = {
  seed: freshSeed(),
  players: 200,
  rounds: 20,
  concurrency: 40,
  gateways: 2,
  workers: 2,
  chaosRate: 0.1,
  kills: 10,
  redisRestarts: 2,
  walletFaultEveryMs: 250,
  walletTimeoutMs: 1500,
  settleTimeoutMs: 180_000,
  keepLogs: false,
  logLevel: 'warn',
};

async function main(): Promise<number> {
  const sizes = parseSizes(process.argv.slice(2), DEFAULTS);
  if (sizes === 'help') {
    console.log(usage('npm run soak --', DEFAULTS));
    return 0;
  }
  const result = await runScenario({
    ...sizes,
    title: 'Soak reconciliation',
    aof: true,
    perPlayer: false,
    out: (line) => console.log(line),
    err: process.stderr,
  });
  return result.exitCode;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(err instanceof UsageError ? `${err.message}\n${usage('npm run soak --', DEFAULTS)}\n` : `soak failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(2);
  },
);
