import { freshSeed, runCommand, type Sizes } from '../soak/cli';

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
  pauses: 0,
  redisRestarts: 0,
  walletFaultEveryMs: 0,
  outageSeconds: 0,
  walletTimeoutMs: 1500,
  settleTimeoutMs: 120_000,
  keepLogs: false,
  topology: 'single',
  minReplicas: 1,
  wallets: 1,
  logLevel: 'info',
};

runCommand({ invocation: 'npm run demo --', name: 'demo', title: 'Demo reconciliation', aof: false, perPlayer: true, defaults: DEFAULTS }, process.argv.slice(2));
