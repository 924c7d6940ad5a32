import { parseArgs } from 'node:util';
import { runScenario, type RunOptions } from './run';

/**
 * Flags shared by `npm run demo` and `npm run soak`: every size is a flag, every default is the
 * caller's. A bad value stops the run with a message naming the flag.
 */
export type Sizes = Pick<
  RunOptions,
  | 'seed'
  | 'players'
  | 'rounds'
  | 'concurrency'
  | 'gateways'
  | 'workers'
  | 'chaosRate'
  | 'kills'
  | 'pauses'
  | 'redisRestarts'
  | 'walletFaultEveryMs'
  | 'walletTimeoutMs'
  | 'settleTimeoutMs'
  | 'keepLogs'
  | 'logLevel'
  | 'outageSeconds'
  | 'topology'
  | 'minReplicas'
  | 'wallets'
  | 'ledgerOutageSeconds'
>;

/** How long `--wallets N` (N ≥ 2) takes one wallet down when `--outage` is not given (contract 11). */
export const WALLETS_OUTAGE_SECONDS = 30;

const TOPOLOGIES: readonly RunOptions['topology'][] = ['single', 'sentinel', 'cluster'];

const FLAGS: Record<Exclude<keyof Sizes, 'keepLogs' | 'logLevel' | 'chaosRate' | 'topology' | 'ledgerOutageSeconds'>, string> = {
  seed: 'seed',
  players: 'players',
  rounds: 'rounds',
  concurrency: 'concurrency',
  gateways: 'gateways',
  workers: 'workers',
  kills: 'kills',
  pauses: 'pauses',
  redisRestarts: 'redis-restarts',
  walletFaultEveryMs: 'wallet-fault-every-ms',
  walletTimeoutMs: 'wallet-timeout-ms',
  settleTimeoutMs: 'settle-timeout-ms',
  outageSeconds: 'outage',
  minReplicas: 'min-replicas',
  wallets: 'wallets',
};

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export function usage(command: string, defaults: Sizes): string {
  const lines = Object.entries(FLAGS)
    .filter(([key]) => key !== 'wallets')
    .map(([key, flag]) => `  --${flag} N   (default ${String(defaults[key as keyof Sizes])})`);
  return [
    `usage: ${command} [flags]`,
    ...lines,
    `  --chaos-rate R   share of wallet money calls chaos hits, 0..1 (default ${defaults.chaosRate})`,
    `  --log-level L    gateway/worker log level (default ${defaults.logLevel})`,
    `  --topology T     single (one Redis; --redis-restarts kill and restart it) or sentinel (a primary, 2 replicas,`,
    `                   3 sentinels; --redis-restarts kill the primary, a replica is promoted; REDIS_MIN_REPLICAS is`,
    `                   --min-replicas) or cluster (3 masters, 3 replicas, REDIS_SHARDS 16; --redis-restarts kill a`,
    `                   master, its replica is promoted; REDIS_MIN_REPLICAS is --min-replicas) (default ${defaults.topology})`,
    `  --wallets N      (default ${defaults.wallets}) with N >= 2: N wallets in a generated WALLETS_FILE, each its own simulator, credentials and`,
    `                   signature, the players spread over them with the same ids in each; one wallet down for`,
    `                   --outage seconds (${WALLETS_OUTAGE_SECONDS} unless given) while the others play; a reconciliation line per wallet`,
    '  --ledger-outage S  run with the ledger (contract 12): PostgreSQL at DATABASE_URL (a database of its own, dropped',
    '                   after) or an embedded PGlite, reached through a proxy the run cuts for S seconds at 40 % of',
    '                   the script (0: no cut); at the end the ledger is compared with the records and the wallet (off unless given)',
    '  --keep-logs      keep the process logs even after a clean run',
  ].join('\n');
}

function integer(flag: string, text: string, min: number): number {
  if (!/^[0-9]+$/.test(text) || Number(text) < min || !Number.isSafeInteger(Number(text))) {
    throw new UsageError(`--${flag}: expected a whole number >= ${min}, got ${JSON.stringify(text)}`);
  }
  return Number(text);
}

export function parseSizes(argv: readonly string[], defaults: Sizes): Sizes | 'help' {
  const options = Object.fromEntries(Object.values(FLAGS).map((flag) => [flag, { type: 'string' as const }]));
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      options: { ...options, 'chaos-rate': { type: 'string' }, 'ledger-outage': { type: 'string' }, 'log-level': { type: 'string' }, topology: { type: 'string' }, 'keep-logs': { type: 'boolean' }, help: { type: 'boolean' } },
      strict: true,
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const v = parsed.values as Record<string, string | boolean | undefined>;
  if (v.help === true) return 'help';
  const sizes: { -readonly [K in keyof Sizes]: Sizes[K] } = { ...defaults };
  for (const [key, flag] of Object.entries(FLAGS) as [keyof typeof FLAGS, string][]) {
    const given = v[flag];
    if (typeof given === 'string') sizes[key] = integer(flag, given, key === 'seed' || key === 'kills' || key === 'pauses' || key === 'redisRestarts' || key === 'walletFaultEveryMs' || key === 'outageSeconds' || key === 'minReplicas' ? 0 : 1);
  }
  const rate = v['chaos-rate'];
  if (typeof rate === 'string') {
    const r = Number(rate);
    if (!/^[0-9.]+$/.test(rate) || !(r >= 0 && r <= 1)) throw new UsageError(`--chaos-rate: expected a number from 0 to 1, got ${JSON.stringify(rate)}`);
    sizes.chaosRate = r;
  }
  if (typeof v['log-level'] === 'string') sizes.logLevel = v['log-level'];
  const ledgerOutage = v['ledger-outage'];
  if (typeof ledgerOutage === 'string') sizes.ledgerOutageSeconds = integer('ledger-outage', ledgerOutage, 0);
  const topology = v.topology;
  if (typeof topology === 'string') {
    const known = TOPOLOGIES.find((t) => t === topology);
    if (known === undefined) throw new UsageError(`--topology: expected ${TOPOLOGIES.join(' or ')}, got ${JSON.stringify(topology)}`);
    sizes.topology = known;
  }
  if (v['keep-logs'] === true) sizes.keepLogs = true;
  if (sizes.wallets > 1 && v.outage === undefined) sizes.outageSeconds = WALLETS_OUTAGE_SECONDS;
  if (sizes.seed > 0xffffffff) throw new UsageError('--seed: at most 4294967295');
  return sizes;
}

/** A seed when none is given: printed with the result, so the run can be repeated. */
/** `npm run soak`'s sizes (the demo's are smaller). */
export function soakDefaults(seed: number): Sizes {
  return {
    seed,
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
}

export function freshSeed(): number {
  return Math.floor(Math.random() * 1_000_000);
}

/** How `npm run demo` and `npm run soak` differ besides their default sizes. */
export interface Command {
  /** e.g. `npm run soak --`, for the usage text. */
  readonly invocation: string;
  /** e.g. `soak`, for the failure line. */
  readonly name: string;
  readonly title: string;
  readonly aof: boolean;
  readonly perPlayer: boolean;
  readonly defaults: Sizes;
  /** With `--ledger-outage`: the PostgreSQL server the run makes its database on; unset: an embedded PGlite. */
  readonly databaseServer?: string;
}

/**
 * Parses the flags, runs the scenario and exits: 0 when nothing was lost, doubled or drifted, 1
 * otherwise, 2 for a bad flag or a run that could not be carried out.
 */
export function runCommand(command: Command, argv: readonly string[]): void {
  const main = async (): Promise<number> => {
    const sizes = parseSizes(argv, command.defaults);
    if (sizes === 'help') {
      console.log(usage(command.invocation, command.defaults));
      return 0;
    }
    const result = await runScenario({
      ...sizes,
      title: command.title,
      aof: command.aof,
      perPlayer: command.perPlayer,
      databaseServer: command.databaseServer,
      out: (line) => console.log(line),
      err: process.stderr,
    });
    return result.exitCode;
  };
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(
        err instanceof UsageError ? `${err.message}\n${usage(command.invocation, command.defaults)}\n` : `${command.name} failed: ${err instanceof Error ? err.stack : String(err)}\n`,
      );
      process.exit(2);
    },
  );
}
