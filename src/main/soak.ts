import { freshSeed, runCommand, type Sizes } from '../soak/cli';

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
  pauses: 5,
  redisRestarts: 2,
  walletFaultEveryMs: 250,
  outageSeconds: 0,
  walletTimeoutMs: 1500,
  settleTimeoutMs: 180_000,
  keepLogs: false,
  topology: 'single',
  minReplicas: 1,
  wallets: 1,
  logLevel: 'warn',
};

runCommand({ invocation: 'npm run soak --', name: 'soak', title: 'Soak reconciliation', aof: true, perPlayer: false, defaults: DEFAULTS }, process.argv.slice(2));
