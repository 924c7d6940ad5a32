import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSimulator, type ChaosSettings, type RecordedCall, type RunningSimulator } from '../sim';
import { Code, codeName } from '../wallet/codes';
import { compensationTransactionId } from '../duties/compensation-id';
import { STALLED_LINE, lockSettings } from '../../workers/worker';
import { reconcile, verdictOf, type RecordView, type Reconciliation } from './checker';
import { EngineClient } from './engine-client';
import { FaultScheduler, LATE_DEBIT_DEADLINES, type Killable, type PauseWindow } from './faults';
import { isAccepted, type EngineHistory, type Interleaving } from './history';
import { Child, baseEnv, tsEntry } from '../lib/child';
import { freePort } from '../lib/free-port';
import { ClusterTopology } from '../lib/redis-cluster';
import { SentinelTopology } from '../lib/redis-sentinel';
import { RedisServer } from '../lib/redis-server';
import { isReservedId } from '../lib/reserved-ids';
import { DEFAULT_WALLET_ID } from '../config/registry';
import { waitFor } from '../lib/wait-for';
import { ProgressBar } from './progress';
import { renderReport, type WalletFaultsMet } from './report';
import { ScriptedEngine, playAll, type Arrangements, type ScriptCounts } from './script';
import { compareLedger, ledgerLines, type LedgerComparison } from './ledger-checker';
import { startSoakLedger, type SoakLedger } from './ledger';
import { ENGINE_KEYS, combine, registryFile, soakWallets, walletLine, type SoakWallet } from './wallets';

/**
 * One run of the demo or the soak: Redis, the simulator (in this process, so its ledger is read
 * directly), N gateways and M workers as child processes; the scripted engine plays while the
 * fault scheduler works; then faults stop, the background work settles, and the checker reconciles.
 */
export interface RunOptions {
  readonly title: string;
  readonly seed: number;
  readonly players: number;
  readonly rounds: number;
  readonly concurrency: number;
  readonly gateways: number;
  readonly workers: number;
  readonly chaosRate: number;
  /** Redis with AOF, fsync always. */
  readonly aof: boolean;
  /**
   * `single`: one redis-server, `redisRestarts` SIGKILL it and start it on the same AOF. `sentinel`:
   * a primary, 2 replicas and 3 sentinels; `redisRestarts` SIGKILL whichever node is the primary
   * (a replica is promoted), then start it again as a replica. `cluster`: a Redis Cluster of 3
   * masters and 3 replicas (REDIS_SHARDS at its default, 16); `redisRestarts` SIGKILL a master (its
   * replica is promoted), then start it again as a replica.
   */
  readonly topology: 'single' | 'sentinel' | 'cluster';
  /** REDIS_MIN_REPLICAS of the gateways with `sentinel` or `cluster` (contract 9). */
  readonly minReplicas: number;
  readonly kills: number;
  /** SIGSTOP a worker past its job lock, then SIGCONT, this many times (its runs are picked up again meanwhile). */
  readonly pauses: number;
  readonly redisRestarts: number;
  /** 0 = chaos only. */
  readonly walletFaultEveryMs: number;
  /** A wallet outage this long at 30 % of the run (the fault scheduler; with several wallets, of one of them); 0 = none. */
  readonly outageSeconds: number;
  readonly walletTimeoutMs: number;
  /** How long the background work may take to settle after the script. */
  readonly settleTimeoutMs: number;
  readonly perPlayer: boolean;
  /**
   * 1: the single-wallet deployment (the v2 variables). More: that many wallets in a generated
   * WALLETS_FILE, each its own simulator, credentials and signature, the players spread over them;
   * the outage takes one of them down, and each is reconciled against its own books.
   */
  readonly wallets: number;
  /**
   * Set: the run keeps the ledger (contract 12) in a PostgreSQL of its own (on the server at
   * DATABASE_URL, else an embedded PGlite), reached through a proxy cut for this many seconds at
   * 40 % of the script; at the end the ledger is compared with the records and the wallet.
   */
  readonly ledgerOutageSeconds?: number;
  /** With the ledger: the PostgreSQL server to make the run's database on (DATABASE_URL); unset: an embedded PGlite. */
  readonly databaseServer?: string;
  readonly logLevel: string;
  /** Keep the run directory (process logs) even when the run is clean. */
  readonly keepLogs: boolean;
  readonly out: (line: string) => void;
  readonly err: NodeJS.WriteStream;
}

export interface RunResult {
  readonly reconciliation: Reconciliation;
  readonly exitCode: 0 | 1;
  readonly lines: readonly string[];
}

/** The single wallet `default` and its engine (the v2 variables). */
const CREDENTIALS = {
  WALLET_BASIC_USER: 'gateway',
  WALLET_BASIC_PASSWORD: 'soak-wallet-password',
  WALLET_SIGNING_SECRET: 'soak-signing-secret',
  ENGINE_API_KEY: 'soak-engine-key',
} as const;

const ADMIN = { ADMIN_USER: 'soak-admin', ADMIN_PASSWORD: 'soak-admin-password' } as const;

const FINAL = new Set(['succeeded', 'failed', 'compensated', 'dead']);

/** How often "never applied" debits, dead records and failed terminates are asked about again (DEAD_CHECK_INTERVAL_MS). */
const DEAD_CHECK_INTERVAL_MS = 2000;
/**
 * DEAD_CHECK_WINDOW_MS: well past the latest late debit, and past a wallet outage by as much (the
 * re-checks must meet the debit, and cannot ask while the wallet is down), yet at most half the
 * settle deadline, so re-checks, terminate retries and the terminates that wait for watched
 * debits end inside the run.
 */
const deadCheckWindowMs = (o: Pick<RunOptions, 'settleTimeoutMs' | 'walletTimeoutMs' | 'outageSeconds'>): number =>
  Math.max(DEAD_CHECK_INTERVAL_MS, Math.min(Math.floor(o.settleTimeoutMs / 2), Math.round(2.5 * LATE_DEBIT_DEADLINES.max * o.walletTimeoutMs) + o.outageSeconds * 1000));

/**
 * SESSION_TTL_SECONDS: a launch whose answer was lost (its gateway killed) leaves a session the
 * engine never learned of, and only its expiry ends it (contract 5.6). Long enough that no session
 * the engine still plays goes idle that long (a kill, a Redis restart or failover, an outage).
 */
const sessionTtlSeconds = (o: Pick<RunOptions, 'outageSeconds'>): number => 60 + o.outageSeconds;

/** How long the work an operator redrove may take to settle, when the run's own settle deadline has passed. */
const OPERATOR_SETTLE_MS = 60_000;

function isDead(view: RecordView | null | undefined): boolean {
  return view?.state === 'dead' || view?.compensation?.state === 'dead';
}

/**
 * The operator's look at the wallet for each dead bet (its compensation dead): a rollback the
 * wallet never applied is resolved "not applied", which re-opens the bet (contract 5.4: it is
 * rolled back anew); one the wallet holds is resolved "applied". Every other dead record is left
 * to the bulk redrive.
 */
async function resolveDeadCompensations(client: EngineClient, sim: RunningSimulator, records: ReadonlyMap<string, RecordView | null>, deadIds: readonly string[]): Promise<Interleaving[]> {
  const met: Interleaving[] = [];
  for (const id of deadIds) {
    const compensation = records.get(id)?.compensation;
    if (compensation?.state !== 'dead') continue;
    const applied = sim.ledger.appliedCount(compensation.transaction_id) > 0;
    const outcome = applied ? 'applied' : 'not_applied';
    const answer = await client.resolve(id, outcome, applied ? 'the rollback is at the wallet' : 'the wallet shows no such rollback');
    met.push({ kind: 'operator-resolution', playerId: '', sessionId: '', transactionId: id, outcome: `compensation dead, ${applied ? 'applied' : 'not applied'} at the wallet: resolved ${outcome}, ${answer.status} → ${answer.stateAfter ?? '?'}` });
  }
  return met;
}

/** A job one worker took over from another that stopped renewing its lock (the taker's `stalled` log line). */
interface Takeover {
  readonly at: number;
  /** The wallet of the job's lane. */
  readonly wallet: string | undefined;
  /** The job's transaction, or the token ref of a terminate job. */
  readonly subject: string;
  readonly kind: 'transaction' | 'terminate';
}

/** The workers' own lines for the jobs they took over, from their logs. */
function takeovers(runDir: string, workers: number): Takeover[] {
  const found: Takeover[] = [];
  for (let i = 1; i <= workers; i += 1) {
    const file = join(runDir, `worker-${i}.log`);
    if (!existsSync(file)) continue;
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (!line.includes(STALLED_LINE)) continue;
      const entry = JSON.parse(line) as { time: number; wallet?: string; transaction_id?: string; token_ref?: string };
      const { time: at, wallet } = entry;
      found.push(entry.transaction_id === undefined ? { at, wallet, subject: entry.token_ref ?? '?', kind: 'terminate' } : { at, wallet, subject: entry.transaction_id, kind: 'transaction' });
    }
  }
  return found;
}

/**
 * The jobs taken over while their worker was paused past its lock (contract 5.3): each stalled run
 * came back after its replacement had started, and the record's final state shows which run won.
 */
function pausedWorkerTakeovers(found: readonly Takeover[], windows: readonly PauseWindow[], recordsOf: (wallet: string | undefined) => ReadonlyMap<string, RecordView | null>): Interleaving[] {
  const finalState = (t: Takeover): string => {
    if (t.kind === 'terminate') return 'terminate';
    const records = recordsOf(t.wallet);
    if (isReservedId(t.subject)) {
      const compensation = [...records.values()].find((view) => view?.compensation?.transaction_id === t.subject)?.compensation;
      return `compensation ${compensation?.state ?? 'unknown'}`;
    }
    const view = records.get(t.subject);
    return `win or refund ${view === undefined ? 'unknown' : view === null ? 'gone' : view.state}`;
  };
  return found
    .filter((t) => windows.some((w) => t.at >= w.from && t.at <= w.to))
    .map((t) => ({ kind: 'worker-paused-past-lock', playerId: '', sessionId: '', transactionId: t.kind === 'transaction' ? t.subject : null, outcome: `taken over, then ${finalState(t)}` }));
}

function isFinal(view: RecordView | null | undefined): boolean {
  if (view === undefined) return false;
  if (view === null) return true;
  return FINAL.has(view.state) && (view.compensation === null || FINAL.has(view.compensation.state));
}

/** Everything started here, so one call stops it all (a dying parent takes the children with it: lib/child). */
class Cluster {
  readonly processes: Child[] = [];
  redis: RedisServer | SentinelTopology | ClusterTopology | undefined;
  sims: RunningSimulator[] = [];
  ledger: SoakLedger | undefined;

  async stop(): Promise<void> {
    await Promise.all(this.processes.map((p) => p.stop()));
    await this.ledger?.close();
    await this.redis?.stop(2000);
    await Promise.all(this.sims.map((sim) => sim.close()));
  }
}

/** The Redis of a run: what the gateways and workers are told, and the fault the scheduler may inject. */
interface RunRedis {
  readonly env: Readonly<Record<string, string>>;
  readonly fault: Killable;
  readonly description: string;
  /** `killed → promoted` per primary kill (sentinel, cluster). */
  readonly failovers: string[];
  /** A line on how the run's keys spread over the masters (cluster). */
  readonly spread?: () => Promise<string>;
}

async function startRedis(o: RunOptions, runDir: string, cluster: Cluster): Promise<RunRedis> {
  const aof = o.aof ? 'always' : 'off';
  if (o.topology === 'single') {
    const redis = await RedisServer.start({ aof, dir: join(runDir, 'redis'), logFile: join(runDir, 'redis.log') });
    cluster.redis = redis;
    return { env: { REDIS_URL: redis.url }, fault: { name: 'redis', kill: () => redis.kill(), restart: () => redis.start() }, description: 'one redis-server', failovers: [] };
  }
  if (o.topology === 'cluster') return startCluster(o, aof, runDir, cluster);
  const topology = await SentinelTopology.start({ replicas: 2, sentinels: 3, aof, dir: join(runDir, 'redis') });
  cluster.redis = topology;
  const failovers: string[] = [];
  return {
    env: { REDIS_SENTINELS: topology.sentinelAddresses, REDIS_SENTINEL_NAME: topology.name, REDIS_MIN_REPLICAS: String(o.minReplicas) },
    fault: {
      name: 'redis primary',
      kill: async () => {
        const { killed, promoted } = await topology.killPrimary();
        failovers.push(`${killed} → ${promoted}`);
        o.err.write(`\nfailover: ${killed} killed, ${promoted} promoted\n`);
      },
      restart: () => topology.restart(),
    },
    description: `sentinel (primary + 2 replicas, 3 sentinels), REDIS_MIN_REPLICAS ${o.minReplicas}`,
    failovers,
  };
}

async function startCluster(o: RunOptions, aof: 'always' | 'off', runDir: string, cluster: Cluster): Promise<RunRedis> {
  const topology = await ClusterTopology.start({ masters: 3, aof, dir: join(runDir, 'redis') });
  cluster.redis = topology;
  const failovers: string[] = [];
  return {
    env: { REDIS_CLUSTER_NODES: topology.nodeAddresses, REDIS_MIN_REPLICAS: String(o.minReplicas) },
    fault: {
      name: 'redis master',
      kill: async () => {
        const { killed, promoted } = await topology.killMaster();
        failovers.push(`${killed} → ${promoted}`);
        o.err.write(`\nfailover: master ${killed} killed, ${promoted} promoted\n`);
      },
      restart: () => topology.restart(),
    },
    description: `cluster (3 masters + 3 replicas), REDIS_SHARDS 16, REDIS_MIN_REPLICAS ${o.minReplicas}`,
    failovers,
    spread: async () => {
      const perMaster = await topology.keysPerMaster();
      const total = perMaster.reduce((n, m) => n + m.keys, 0);
      const most = Math.max(...perMaster.map((m) => m.keys));
      return `keys per master: ${perMaster.map((m) => `${m.address} ${m.keys}`).join(', ')} (of ${total}; the most on one master ${total === 0 ? 0 : Math.round((100 * most) / total)} %)`;
    },
  };
}

/** A gateway or worker: TypeScript entry run by node with the tsx loader, its output in the run directory. */
function nodeProcess(name: string, entry: string, env: Readonly<Record<string, string>>, logDir: string): Child {
  return new Child({ name, args: tsEntry(entry), env, logFile: join(logDir, `${name}.log`) });
}

async function healthy(url: string): Promise<boolean> {
  const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1000) });
  await res.arrayBuffer();
  return res.status === 200;
}

/**
 * One wallet of the run and the engine playing on it: with `--wallets 1` the single-wallet
 * deployment (the v2 variables, `GET /launch`), else a wallet of the generated WALLETS_FILE.
 */
interface World {
  /** undefined: the single wallet `default` of the v2 variables. */
  readonly wallet: SoakWallet | undefined;
  readonly sim: RunningSimulator;
  readonly client: EngineClient;
  readonly engine: ScriptedEngine;
  readonly arranged: { heldWins: number; slowTerminates: number; slowBets: number; readonly deadCompensationBets: Set<string> };
}

/** What one wallet's settle came to, read by the report and the checker. */
interface Settled {
  readonly world: World;
  readonly history: EngineHistory;
  readonly records: Map<string, RecordView | null>;
  readonly deadIds: readonly string[];
  readonly resolutions: readonly Interleaving[];
  readonly redriven: number;
  readonly overBudget: number;
  readonly terminatedTokens: Set<string>;
  readonly reconciliation: Reconciliation;
}

/** Chaos of wallet i: the run's seed for the first, so one wallet meets the chaos it always met. */
const chaosSeed = (seed: number, i: number): number => (seed + Math.imul(i, 0x9e3779b1)) >>> 0;

export async function runScenario(o: RunOptions): Promise<RunResult> {
  const runDir = mkdtempSync(join(tmpdir(), `wgw-${o.title.split(' ')[0]?.toLowerCase() ?? 'run'}-`));
  const cluster = new Cluster();
  let clean = false;
  try {
    const redis = await startRedis(o, runDir, cluster);
    if (o.ledgerOutageSeconds !== undefined) cluster.ledger = await startSoakLedger(o.databaseServer);
    const ledger = cluster.ledger;
    const chaos = (i: number): ChaosSettings | undefined => (o.chaosRate > 0 ? { seed: chaosSeed(o.seed, i), rate: o.chaosRate } : undefined);
    const wallets = o.wallets > 1 ? soakWallets(o.wallets) : undefined;
    const sims: RunningSimulator[] = [];
    cluster.sims = sims;
    if (wallets === undefined) {
      sims.push(
        await startSimulator({
          basicUser: CREDENTIALS.WALLET_BASIC_USER,
          basicPassword: CREDENTIALS.WALLET_BASIC_PASSWORD,
          signingSecret: CREDENTIALS.WALLET_SIGNING_SECRET,
          chaos: chaos(0),
        }),
      );
    } else {
      for (const [i, w] of wallets.entries()) {
        sims.push(
          await startSimulator({ basicUser: w.basicUser, basicPassword: w.basicPassword, signingSecret: w.signingSecret, signatureAlgo: w.signatureAlgo, signatureEncoding: w.signatureEncoding, chaos: chaos(i) }),
        );
      }
    }

    const env: Record<string, string> = {
      // PATH, HOME and the like; nothing else of the caller's environment leaks into the children.
      ...baseEnv(),
      ...ADMIN,
      ...redis.env,
      QUEUE_PREFIX: `wgw-run-${o.seed}-${randomBytes(3).toString('hex')}`,
      GATEWAY_PROCESSES: '1',
      SWEEP_INTERVAL_MS: '1000',
      DEAD_CHECK_INTERVAL_MS: String(DEAD_CHECK_INTERVAL_MS),
      DEAD_CHECK_WINDOW_MS: String(deadCheckWindowMs(o)),
      SESSION_TTL_SECONDS: String(sessionTtlSeconds(o)),
      WORKER_CONCURRENCY: '20',
      LOG_LEVEL: o.logLevel,
    };
    if (wallets === undefined) {
      Object.assign(env, CREDENTIALS, {
        WALLET_BASE_URL: (sims[0] as RunningSimulator).url,
        PROVIDER_ID: '18446744073709551615',
        WALLET_TIMEOUT_MS: String(o.walletTimeoutMs),
        RETRY_DELAY_UNIT: 'ms',
      });
    } else {
      // The registry instead of the single-wallet variables: each wallet's URL, secrets, signature and timeout.
      const secrets = join(runDir, 'secrets');
      mkdirSync(secrets, { mode: 0o700 });
      const { file, env: secretEnv } = registryFile(
        wallets,
        sims.map((s) => s.url),
        o.walletTimeoutMs,
        (name, value) => {
          const path = join(secrets, name);
          writeFileSync(path, `${value}\n`, { mode: 0o600 });
          return path;
        },
      );
      const walletsFile = join(runDir, 'wallets.json');
      writeFileSync(walletsFile, JSON.stringify(file, null, 2));
      Object.assign(env, secretEnv, { WALLETS_FILE: walletsFile });
    }
    if (ledger !== undefined) {
      // A killed worker's unacknowledged outbox entries are taken over after this long (default 60 s).
      Object.assign(env, { DATABASE_URL: ledger.viaProxy, LEDGER_CLAIM_IDLE_MS: '10000' });
      ledger.connect(env);
    }
    // A gateway or worker that dies on its own is a finding the run cannot go on past: stop with its log.
    let crash: (err: Error) => void = () => undefined;
    const crashed = new Promise<never>((_resolve, reject) => (crash = reject));
    crashed.catch(() => undefined);
    const guard = <T>(work: Promise<T>): Promise<T> => Promise.race([work, crashed]);
    const watch = (p: Child): void => {
      p.onCrash = (detail) => crash(new Error(`${detail}; the end of its log:\n${p.output(3000)}`));
    };
    const gatewayUrls: string[] = [];
    const killables: Killable[] = [];
    for (let i = 0; i < o.gateways; i += 1) {
      const port = await freePort();
      const url = `http://127.0.0.1:${port}`;
      const p = nodeProcess(`gateway-${i + 1}`, 'src/main/gateway.ts', { ...env, PORT: String(port) }, runDir);
      watch(p);
      cluster.processes.push(p);
      gatewayUrls.push(url);
      const up = async (): Promise<void> => {
        await p.start();
        await waitFor(`${p.name} answering /healthz`, () => healthy(url), 60_000, { intervalMs: 50, alive: () => p.isRunning(), context: () => p.output(4000) });
      };
      killables.push({ name: p.name, kill: async () => void (await p.kill()), restart: up });
    }
    for (let i = 0; i < o.workers; i += 1) {
      const p = nodeProcess(`worker-${i + 1}`, 'workers/main.ts', env, runDir);
      watch(p);
      cluster.processes.push(p);
      killables.push({
        name: p.name,
        kill: async () => void (await p.kill()),
        restart: () => p.start(),
        pause: () => p.signalGroup('SIGSTOP'),
        resume: () => p.signalGroup('SIGCONT'),
      });
    }
    await Promise.all(killables.map((k) => k.restart()));

    const progress = new ProgressBar(o.players * o.rounds, 'rounds', o.err);
    const worlds: World[] = sims.map((sim, i) => {
      const wallet = wallets?.[i];
      const client = new EngineClient({
        gateways: gatewayUrls,
        apiKey: wallet === undefined ? CREDENTIALS.ENGINE_API_KEY : ENGINE_KEYS[wallet.engineKey],
        adminUser: ADMIN.ADMIN_USER,
        adminPassword: ADMIN.ADMIN_PASSWORD,
        answerTimeoutMs: Math.max(10_000, o.walletTimeoutMs * 4),
        resendDeadlineMs: 120_000,
        wallet: wallet?.id,
      });
      const arranged = { heldWins: 0, slowTerminates: 0, slowBets: 0, deadCompensationBets: new Set<string>() };
      const arrange: Arrangements = {
        holdWin: (transactionId, times) => {
          arranged.heldWins += 1;
          sim.faults.failNext('credit', times, Code.InternalServiceError, { transactionId });
        },
        slowTerminate: () => {
          arranged.slowTerminates += 1;
          sim.faults.delayNext('terminate', 1, Math.round(o.walletTimeoutMs * 0.6));
        },
        slowBet: (transactionId) => {
          arranged.slowBets += 1;
          // Mostly answered within the gateway's deadline, a third of them past it (refused, compensated).
          sim.faults.delayNext('debit', 1, Math.round(o.walletTimeoutMs * (0.3 + (arranged.slowBets % 3) * 0.45)), { transactionId });
        },
        deadCompensation: (transactionId) => {
          arranged.deadCompensationBets.add(transactionId);
          sim.faults.applyThenDrop('debit', 1, { mode: 'reset', transactionId });
          sim.faults.failNext('rollback', 1, Code.TokenDeactivated, { transactionId: compensationTransactionId(transactionId) });
        },
      };
      const engine = new ScriptedEngine({
        seed: o.seed,
        // Players p ≡ i (mod wallets): the wallet's share of the run's players.
        players: Math.ceil((o.players - i) / sims.length),
        rounds: o.rounds,
        concurrency: o.concurrency,
        currency: 'EUR',
        scale: 2,
        siteId: '4294967297',
        gameId: 'soak-slots',
        client,
        onRound: () => progress.tick(),
        arrange,
        spread: wallets === undefined ? undefined : { wallet: i, wallets: sims.length },
      });
      return { wallet, sim, client, engine, arranged };
    });
    // The wallet an outage takes down: one of them, by the seed.
    const outageWallet = o.seed % worlds.length;
    const withFaults = o.kills > 0 || o.pauses > 0 || o.redisRestarts > 0 || o.walletFaultEveryMs > 0 || o.outageSeconds > 0;
    const scheduler = withFaults
      ? new FaultScheduler({
          seed: o.seed,
          wallets: worlds.map((w) => ({ name: w.wallet?.id ?? 'default', faults: w.sim.faults })),
          outageWallet,
          walletFaultEveryMs: o.walletFaultEveryMs,
          walletTimeoutMs: o.walletTimeoutMs,
          kills: o.kills,
          pauses: o.pauses,
          // Past the job lock, and past the next stall check that hands its jobs to another run.
          pauseMs: 2 * lockSettings(o.walletTimeoutMs).lockDuration + 2_000,
          takeoverMs: 2 * lockSettings(o.walletTimeoutMs).lockDuration,
          redisRestarts: o.redisRestarts,
          processes: killables,
          redis: o.redisRestarts > 0 ? redis.fault : undefined,
          outageSeconds: o.outageSeconds,
          progress: () => progress.fraction,
          log: (line) => o.err.write(`\n${line}\n`),
        })
      : undefined;

    scheduler?.start();
    const ledgerOutage =
      ledger !== undefined && o.ledgerOutageSeconds !== undefined && o.ledgerOutageSeconds > 0
        ? guard(ledger.outage(o.ledgerOutageSeconds, LEDGER_OUTAGE_AT, () => progress.fraction, (line) => o.err.write(`\n${line}\n`)))
        : Promise.resolve();
    ledgerOutage.catch(() => undefined);
    const playedUntil = await guard(playAll(worlds.map((w) => w.engine), o.players, o.concurrency).then(() => Date.now())).catch(async (err: unknown) => {
      await scheduler?.abort();
      throw err;
    });
    await guard(scheduler?.stop() ?? Promise.resolve());
    if (scheduler?.failure) throw scheduler.failure;
    // The incident is over: the wallets answer normally again, and the background work must finish.
    for (const w of worlds) w.sim.faults.clear();

    const settleStart = Date.now();
    const settleDeadline = settleStart + o.settleTimeoutMs;
    const histories = worlds.map((w) => w.engine.history());
    // Late debits land, and a refused bet the wallet applied after all must then be rolled back (re-checks).
    // (A bet whose compensation the wallet was set to refuse for good waits for the operator below.)
    await guard(Promise.all(worlds.map((w, i) => lateWork(w.sim, histories[i] as EngineHistory, settleDeadline, o.err, w.arranged.deadCompensationBets))));
    const lateWorkDoneAt = Date.now();
    const allRecords = await guard(Promise.all(worlds.map((w, i) => settle(w.client, (histories[i] as EngineHistory).transactions.map((t) => t.transactionId), settleDeadline, o.err))));
    const recordsFinalAt = Date.now();
    // The operator's part (contract 5.6: dead work holds its token until an operator redrives or
    // resolves it): with the wallet healthy again, every dead record is redriven once, in bulk, wallet by wallet.
    let workDeadline = settleDeadline;
    const operatorSteps = await guard(
      Promise.all(
        worlds.map(async (w, i) => {
          const records = allRecords[i] as Map<string, RecordView | null>;
          // The spec's budget, 1 + 10 tries at most however long the wallet was down, read before an
          // operator's redrive gives a record a fresh one (its `attempts` keeps counting).
          const overBudget = [...records.values()].filter((view) => (view?.attempts ?? 0) > 11).length;
          const deadIds = [...records].filter(([, view]) => isDead(view)).map(([id]) => id);
          const resolutions = await resolveDeadCompensations(w.client, w.sim, records, deadIds);
          let redriven = 0;
          if (deadIds.length > 0) {
            redriven = (await w.client.redriveDead()).length;
            // A resolution "not applied" re-opens its bet: rolled back anew, "never applied" is then
            // watched for the whole re-check window, and its token waits for the watch (contract 5.4).
            const redriveDeadline = Math.max(settleDeadline, Date.now() + OPERATOR_SETTLE_MS + (resolutions.length > 0 ? deadCheckWindowMs(o) : 0));
            workDeadline = Math.max(workDeadline, redriveDeadline);
            // The redriven records and whatever waited behind them: a round's closing win is held while
            // an earlier credit of its round is dead (seed 46 on Sentinel once ended with that win still
            // pending, counted lost, because only the dead ids were waited for).
            const behind = [...records].filter(([, view]) => !isFinal(view)).map(([id]) => id);
            for (const [id, view] of await settle(w.client, [...deadIds, ...behind], redriveDeadline, o.err)) records.set(id, view);
          }
          return { overBudget, deadIds, resolutions, redriven };
        }),
      ),
    );
    // A token is terminated once every session on it ended and its work settled: wait for those too.
    const allTerminated = await guard(Promise.all(worlds.map((w, i) => terminations(w.sim, endedTokens(histories[i] as EngineHistory), workDeadline))));
    const settledInMs = Date.now() - settleStart;
    // The ledger: once the connection is back and every change left the outbox, equal to the records (contract 12).
    await ledgerOutage;
    const ledgerCheck = ledger === undefined ? undefined : await guard(checkLedger(ledger, worlds, histories, Date.now() + LEDGER_DRAIN_MS));
    const settled: Settled[] = worlds.map((world, i) => {
      const history = histories[i] as EngineHistory;
      const records = allRecords[i] as Map<string, RecordView | null>;
      const terminatedTokens = allTerminated[i] as Set<string>;
      const step = operatorSteps[i] as (typeof operatorSteps)[number];
      const reconciliation = reconcile({
        history,
        ledger: { players: world.sim.ledger.players(), transactions: world.sim.ledger.transactions() },
        records,
        terminatedTokens,
        calledTransactions: new Set(world.sim.calls().flatMap((c) => (c.transactionId === undefined ? [] : [c.transactionId]))),
      });
      return { world, history, records, terminatedTokens, reconciliation, ...step };
    });
    const reconciliation = wallets === undefined ? (settled[0] as Settled).reconciliation : combine(settled.map((s) => ({ wallet: s.world.wallet?.id ?? 'default', reconciliation: s.reconciliation })));

    const calls = worlds.flatMap((w) => w.sim.calls());
    const walletFaults = tally(calls.flatMap((c) => (c.fault === undefined ? [] : [`${c.faultSource ?? 'armed'} ${c.fault}`])));
    const lateDebits = calls.filter((c) => c.operation === 'debit' && c.faultSource === 'armed' && c.fault === 'latency');
    const arrangedSum = (of: (a: World['arranged']) => number): number => worlds.reduce((n, w) => n + of(w.arranged), 0);
    const faultsMet: WalletFaultsMet = {
      lateDebits: lateDebits.length,
      lateDebitsApplied: lateDebits.filter((c) => c.applied).length,
      lateDebitsRefused: tally(lateDebits.filter((c) => !c.applied).map((c) => (c.code === undefined ? 'no answer' : codeName(c.code)))),
      // The scheduler's terminate faults; an arranged slow terminate is a delay ('latency'), counted apart.
      terminateFaults: calls.filter((c) => c.operation === 'terminate' && c.faultSource === 'armed' && c.fault !== 'latency').length,
      heldWins: arrangedSum((a) => a.heldWins),
      slowTerminates: arrangedSum((a) => a.slowTerminates),
      slowBets: arrangedSum((a) => a.slowBets),
      deadCompensations: arrangedSum((a) => a.deadCompensationBets.size),
    };
    const allTakeovers = takeovers(runDir, o.workers);
    const recordsOf = (wallet: string | undefined): ReadonlyMap<string, RecordView | null> =>
      (settled.find((s) => s.world.wallet === undefined || s.world.wallet.id === wallet) ?? (settled[0] as Settled)).records;
    const pausedTakeovers = pausedWorkerTakeovers(allTakeovers, scheduler?.pauseWindows ?? [], recordsOf);
    const lines = renderReport({
      title: o.title,
      seed: o.seed,
      parameters: {
        players: o.players,
        rounds: o.rounds,
        concurrency: o.concurrency,
        gateways: o.gateways,
        workers: o.workers,
        ...(wallets === undefined ? {} : { wallets: wallets.map((w) => w.id).join(' ') }),
        'chaos rate': o.chaosRate,
        'wallet fault every ms': o.walletFaultEveryMs,
        kills: o.kills,
        'worker pauses': o.pauses,
        'redis restarts': o.redisRestarts,
        'redis aof': o.aof ? 'always' : 'off',
        topology: redis.description,
        'wallet timeout ms': o.walletTimeoutMs,
        'dead-check interval ms': DEAD_CHECK_INTERVAL_MS,
        'dead-check window ms': deadCheckWindowMs(o),
        'session ttl s': sessionTtlSeconds(o),
      },
      script: sumCounts(worlds.map((w) => w.engine.counts)),
      interleavings: [...settled.flatMap((s) => [...s.history.interleavings, ...s.resolutions]), ...pausedTakeovers],
      resends: worlds.reduce((n, w) => n + w.client.resends, 0),
      walletFaults,
      faultsMet,
      scheduler: scheduler?.counts,
      reconciliation,
      perPlayer: o.perPlayer,
      settledInMs,
      failovers: redis.failovers,
    });
    const outage = scheduler?.outage;
    const down = settled[outageWallet] as Settled;
    if (outage?.endedAt !== undefined) {
      // What an outage left for operators: dead records (each one work by hand), and how long the
      // background took to catch up once the wallet was back.
      const drainedInMs = Math.max(0, settleStart + settledInMs - outage.endedAt);
      const backAt = outage.endedAt;
      const after = (at: number): string => `+${((at - backAt) / 1000).toFixed(1)} s`;
      const downCalls = down.world.sim.calls();
      // The compensations the run set the wallet to refuse for good die by design, outage or not.
      const unarranged = down.deadIds.filter((id) => !down.world.arranged.deadCompensationBets.has(id));
      const arrangedDead = down.deadIds.length - unarranged.length;
      const which = down.world.wallet === undefined ? 'the wallet' : `wallet ${down.world.wallet.id}`;
      lines.splice(
        lines.length - 1,
        0,
        `outage: ${which} down ${Math.round((outage.endedAt - outage.startedAt) / 1000)} s; dead records after it: ${unarranged.length}${unarranged.length > 0 ? ` (${unarranged.slice(0, 10).join(', ')})` : ''}${arrangedDead > 0 ? ` besides ${arrangedDead} compensations the wallet was set to refuse for good` : ''}; records over the spec's 10 retries: ${down.overBudget}; everything settled ${drainedInMs} ms after the wallet came back`,
        ...unarranged.slice(0, 10).map((id) => `  dead ${id}: ${triesOf(downCalls, id, backAt)}`),
        // What that time is made of: the engine's own play after the outage is not the drain.
        `outage drain, after the wallet came back: the engine played until ${after(playedUntil)}, late debits met by ${after(lateWorkDoneAt)}, every record final by ${after(recordsFinalAt)}, every token terminated by ${after(settleStart + settledInMs)}; ${outageBacklog(downCalls, backAt, after)}; ${lastTermination(downCalls, endedTokens(down.history), after)}`,
      );
      // The other wallets played on: what each applied while the one was down.
      if (wallets !== undefined) lines.splice(lines.length - 1, 0, `while ${which} was down: ${settled.map((s) => `${s.world.wallet?.id ?? ''} ${duringOutage(s.world.sim.calls(), outage.startedAt, backAt)}`).join('; ')}`);
    }
    if (o.pauses > 0 || o.kills > 0) {
      // The runs a paused or killed worker held: each was picked up again by another run (contract 5.3).
      lines.splice(lines.length - 1, 0, `jobs picked up again after their worker stopped renewing the lock: ${allTakeovers.length} (${pausedTakeovers.length} from a paused worker, ${allTakeovers.length - pausedTakeovers.length} from a killed one)`);
    }
    const deadAfterRun = settled.reduce((n, s) => n + s.deadIds.length, 0);
    if (deadAfterRun > 0) {
      const still = settled.reduce((n, s) => n + [...s.records.values()].filter(isDead).length, 0);
      const resolved = settled.reduce((n, s) => n + s.resolutions.length, 0);
      const redriven = settled.reduce((n, s) => n + s.redriven, 0);
      lines.splice(lines.length - 1, 0, `operator: ${deadAfterRun} records dead after the run, ${resolved} compensations resolved after a look at the wallet, ${redriven} redriven in bulk, ${still} dead after that`);
    }
    // Where the run's keys ended up (a cluster: the spread of the shards over the masters).
    if (redis.spread !== undefined) lines.splice(lines.length - 1, 0, await redis.spread());
    // Each wallet against its own books, just before the run's closing line (their sum).
    if (wallets !== undefined) {
      lines.splice(lines.length - 1, 0, await sharedIds(settled, worlds[0] as World));
      const downSeconds = outage?.endedAt === undefined ? undefined : Math.round((outage.endedAt - outage.startedAt) / 1000);
      lines.splice(lines.length - 1, 0, ...settled.map((s, i) => walletLine(s.world.wallet as SoakWallet, s.reconciliation, i === outageWallet ? downSeconds : undefined)));
    }
    if (ledger !== undefined && ledgerCheck !== undefined) lines.splice(lines.length - 1, 0, ...ledgerReport(o, ledger, ledgerCheck));
    await Promise.all(worlds.map((w) => w.client.close()));
    const ledgerEqual = ledgerCheck === undefined || ledgerCheck.perWallet.every((w) => w.comparison.findings.length === 0);
    const exitCode = reconciliation.lost === 0 && reconciliation.doubled === 0 && reconciliation.drift === 0 && ledgerEqual ? 0 : 1;
    clean = exitCode === 0 && reconciliation.findings.length === 0;
    if (!clean || o.keepLogs) lines.splice(lines.length - 1, 0, `process logs kept in ${runDir}`);
    for (const line of lines) o.out(line);
    return { reconciliation, exitCode, lines };
  } catch (err) {
    o.err.write(`\nrun failed; process logs kept in ${runDir}\n`);
    throw err;
  } finally {
    await cluster.stop();
    if (clean && !o.keepLogs) rmSync(runDir, { recursive: true, force: true });
  }
}

/** Where in the script the ledger's connection is cut (`--ledger-outage`). */
const LEDGER_OUTAGE_AT = 0.4;
/** How long the outbox may take to drain once everything else settled. */
const LEDGER_DRAIN_MS = 120_000;

interface LedgerCheck {
  readonly drainedInMs: number;
  readonly left: number;
  readonly perWallet: { readonly wallet: string; readonly comparison: LedgerComparison }[];
}

/** Waits for the outbox to drain, then holds each wallet's ledger against its records, history and books. */
async function checkLedger(ledger: SoakLedger, worlds: readonly World[], histories: readonly EngineHistory[], deadline: number): Promise<LedgerCheck> {
  const drained = await ledger.drained(deadline);
  const snapshot = await ledger.snapshot(deadline);
  const perWallet = worlds.map((w, i) => {
    const wallet = w.wallet?.id ?? DEFAULT_WALLET_ID;
    const of = snapshot.get(wallet) ?? { redis: [], changes: [], newest: [] };
    const historyIds = new Set((histories[i] as EngineHistory).transactions.map((t) => t.transactionId));
    return { wallet, comparison: compareLedger({ wallet, ...of, historyIds, books: w.sim.ledger.transactions() }) };
  });
  return { drainedInMs: drained.ms, left: drained.left.outboxLength, perWallet };
}

/** The ledger's lines of the report: where PostgreSQL came from, the outage's outbox, the drain, and the comparison. */
function ledgerReport(o: RunOptions, ledger: SoakLedger, check: LedgerCheck): string[] {
  const w = ledger.watch;
  const secs = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
  const outage =
    w.cutAt === undefined || w.restoredAt === undefined
      ? 'no outage'
      : `cut for ${secs(w.restoredAt - w.cutAt)} at ${Math.round(LEDGER_OUTAGE_AT * 100)} % of the script; outbox peak ${w.peakLength} entries, lag peak ${w.peakLagSeconds.toFixed(1)} s ` +
        `(${w.samples} samples); caught up (lag < 2 s) ${w.caughtUpAt === undefined ? 'never' : `${secs(w.caughtUpAt - w.restoredAt)} after the connection came back`}`;
  return [
    `ledger outage: PostgreSQL ${ledger.kind === 'server' ? 'server (DATABASE_URL)' : 'embedded (PGlite)'} through a proxy, --ledger-outage ${o.ledgerOutageSeconds ?? 0}: ${outage}; ` +
      `outbox ${check.left === 0 ? 'drained' : `NOT drained (${check.left} left)`} ${secs(check.drainedInMs)} after the run settled`,
    ...ledgerLines(check.perWallet),
  ];
}

/**
 * The ids the wallets share (each wallet's engine makes the same ones): players and the gateway's
 * records held under one id in several wallets, and what a lookup of one such record without
 * `?wallet=` is answered (contract 11: `409 AMBIGUOUS_TRANSACTION`).
 */
async function sharedIds(settled: readonly Settled[], world: World): Promise<string> {
  const inSeveral = (ids: readonly (readonly string[])[]): string[] => {
    const seen = new Map<string, number>();
    for (const list of ids) for (const id of new Set(list)) seen.set(id, (seen.get(id) ?? 0) + 1);
    return [...seen].filter(([, n]) => n > 1).map(([id]) => id);
  };
  const players = inSeveral(settled.map((s) => s.history.players.map((p) => p.playerId)));
  const records = inSeveral(settled.map((s) => [...s.records].filter(([, view]) => view !== null && view !== undefined).map(([id]) => id)));
  const probe = records[0];
  const answer = probe === undefined ? 'none to look up' : `a lookup of ${probe} without ?wallet= answered ${await world.client.lookupEverywhere(probe)}`;
  return `ids in several wallets: ${players.length} players (tokens and rounds with them), ${records.length} transactions with a record in each; ${answer}`;
}

/** The engines' counts added up. */
function sumCounts(counts: readonly ScriptCounts[]): ScriptCounts {
  const total = { ...(counts[0] as ScriptCounts) };
  for (const c of counts.slice(1)) for (const key of Object.keys(total) as (keyof ScriptCounts)[]) total[key] += c[key];
  return total;
}

/** What one wallet did while another was down: the debits it applied, of those that reached it. */
function duringOutage(calls: readonly RecordedCall[], from: number, to: number): string {
  const debits = calls.filter((c) => c.operation === 'debit' && c.at >= from && c.at <= to);
  const credits = calls.filter((c) => c.operation === 'credit' && c.at >= from && c.at <= to);
  return `${debits.filter((c) => c.applied).length} of ${debits.length} debits and ${credits.filter((c) => c.applied).length} of ${credits.length} credits applied`;
}

/** Polls every record until it is final (its compensation too) or the deadline passes. */
async function settle(client: EngineClient, ids: readonly string[], deadline: number, err: NodeJS.WriteStream): Promise<Map<string, RecordView | null>> {
  const records = new Map<string, RecordView | null>();
  let open = [...ids];
  for (let pass = 0; ; pass += 1) {
    const still: string[] = [];
    for (let i = 0; i < open.length; i += 32) {
      const batch = open.slice(i, i + 32);
      const views = await Promise.all(batch.map((id, k) => client.record(id, i + k)));
      batch.forEach((id, k) => {
        const view = views[k];
        if (view !== undefined) records.set(id, view);
        if (!isFinal(view)) still.push(id);
      });
    }
    open = still;
    if (open.length === 0 || Date.now() > deadline) break;
    if (pass % 5 === 0) err.write(`settling: ${open.length} records not final yet\n`);
    await new Promise((r) => setTimeout(r, 500));
  }
  return records;
}

function tally(keys: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const k of keys) counts[k] = (counts[k] ?? 0) + 1;
  return counts;
}

/** Tokens every session of which the engine ended (an accepted end): each must be terminated. */
function endedTokens(history: EngineHistory): string[] {
  const accepted = new Set(history.ends.filter((e) => isAccepted(e.reply)).map((e) => e.sessionId));
  return history.players.map((p) => p.token).filter((token) => history.sessions.every((s) => s.token !== token || accepted.has(s.sessionId)));
}

/**
 * Polls until no wallet call is still held by a delay fault and every bet refused to the engine
 * that the wallet applied (late) is rolled back, or the deadline passes: the gateway's re-checks
 * of "never applied" debits must have had their chance before the books are read.
 */
async function lateWork(sim: RunningSimulator, history: EngineHistory, deadline: number, err: NodeJS.WriteStream, awaitingOperator: ReadonlySet<string>): Promise<void> {
  const refusedBets = history.transactions
    .filter((t) => t.kind === 'debit' && verdictOf(t).verdict === 'refused' && !awaitingOperator.has(t.transactionId))
    .map((t) => t.transactionId);
  for (let pass = 0; ; pass += 1) {
    const held = sim.calls().filter((c) => c.fault === 'latency' && c.code === undefined).length;
    const owed = refusedBets.filter((id) => {
      const applied = sim.ledger.transaction(id);
      return applied !== undefined && !applied.rolledBack;
    }).length;
    if ((held === 0 && owed === 0) || Date.now() > deadline) return;
    if (pass % 10 === 0) err.write(`settling: ${held} wallet calls still held, ${owed} refused bets applied and not rolled back yet\n`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/**
 * The money calls of one record (and of the compensations of a bet) as the wallet saw them, each
 * as its code (`u`: no answer) and what made it fail (`o` the outage, `a` an armed fault, `c`
 * chaos) with its time from the wallet's return: whether the outage or the run's faults spent a
 * dead record's tries.
 */
function triesOf(calls: readonly RecordedCall[], id: string, backAt: number): string {
  const source = { outage: 'o', armed: 'a', chaos: 'c' } as const;
  const tries = calls.filter((c) => (c.operation === 'credit' || c.operation === 'rollback' || c.operation === 'debit') && (c.transactionId === id || c.body?.reference_transaction_id === id));
  return tries
    .map((c) => `${c.operation === 'rollback' && c.transactionId !== id ? 'rb ' : ''}${c.code ?? 'u'}${c.faultSource === undefined ? '' : source[c.faultSource]}@${((c.at - backAt) / 1000).toFixed(1)}`)
    .join(' ');
}

/**
 * The work the outage itself held: credits and rollbacks the outage answered, and the compensations
 * of debits it answered. When the last of them was applied, once the wallet was back.
 */
function outageBacklog(calls: readonly RecordedCall[], backAt: number, after: (at: number) => string): string {
  const hit = new Set(calls.flatMap((c) => (c.faultSource === 'outage' && c.transactionId !== undefined ? [c.transactionId] : [])));
  let count = 0;
  let lastAt: number | undefined;
  for (const c of calls) {
    const reference = c.body?.reference_transaction_id;
    const held = c.transactionId !== undefined && (hit.has(c.transactionId) || (typeof reference === 'string' && isReservedId(c.transactionId) && hit.has(reference)));
    if (!held || c.at < backAt || c.code !== Code.Success || (c.operation !== 'credit' && c.operation !== 'rollback')) continue;
    count += 1;
    lastAt = Math.max(lastAt ?? c.at, c.at);
  }
  return `${count} credits and rollbacks the outage held applied by ${lastAt === undefined ? '-' : after(lastAt)}`;
}

/**
 * What the token terminated last waited for, read from the wallet's log: its last other call before
 * the terminate (a watched debit's `status` re-checks hold its token, contract 5.4) and how many
 * `status` calls were made on it.
 */
function lastTermination(calls: readonly RecordedCall[], tokens: readonly string[], after: (at: number) => string): string {
  const wanted = new Set(tokens);
  let last: RecordedCall | undefined;
  for (const c of calls) {
    const token = c.body?.token;
    if (c.operation === 'terminate' && c.code === Code.Success && typeof token === 'string' && wanted.has(token) && (last === undefined || c.at > last.at)) last = c;
  }
  if (last === undefined) return 'no token terminated';
  const terminate = last;
  const before = calls.filter((c) => c.body?.token === terminate.body?.token && c.operation !== 'terminate' && c.at < terminate.at);
  const previous = before.reduce<RecordedCall | undefined>((a, c) => (a === undefined || c.at > a.at ? c : a), undefined);
  const statuses = before.filter((c) => c.operation === 'status').length;
  const action = typeof previous?.body?.action === 'string' ? ` (${previous.body.action})` : '';
  return `the last token terminated at ${after(terminate.at)}, its last call before that ${previous === undefined ? 'none' : `${previous.operation}${action} at ${after(previous.at)}`}, ${statuses} status calls on it in all`;
}

/** Tokens the wallet terminated, polled until every one of `expected` is among them or the deadline passes. */
async function terminations(sim: RunningSimulator, expected: readonly string[], deadline: number): Promise<Set<string>> {
  for (;;) {
    const terminated = new Set<string>();
    for (const call of sim.calls()) {
      const token = call.body?.token;
      if (call.operation === 'terminate' && call.code === Code.Success && typeof token === 'string') terminated.add(token);
    }
    if (expected.every((t) => terminated.has(t)) || Date.now() > deadline) return terminated;
    await new Promise((r) => setTimeout(r, 200));
  }
}
