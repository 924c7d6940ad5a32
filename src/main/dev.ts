import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadGatewayConfig, loadSimConfig, loadWorkerConfig, SIM_DEFAULTS, type GatewayConfig, type SimConfig } from '../config/env';
import { DEFAULT_WALLET_ID } from '../config/registry';
import { BULL_BOARD_PATH } from '../http/admin';
import { DEMO_GAME_PATH } from '../http/demo-game';
import { createClosers, runUntilSignal, startWith, type Running } from '../lib/lifecycle';
import { createLogger } from '../observability/logger';
import { createMetrics } from '../observability/metrics';
import { startSimulator, type RunningSimulator } from '../sim';
import { spawnEmbeddedPostgres } from '../ledger/embedded';
import { startWorker } from '../../workers/worker';
import { RedisUnavailableError, ensureDevRedis, type DevRedis } from './dev-redis';
import { startGateway } from './gateway';

/**
 * `npm run dev`: the gateway, one worker and two wallet simulators in this one process, for a first
 * look. The simulators are two casinos of one registry (contract 11), "casino-a" and "casino-b",
 * each with its own credentials, signing algorithm and provider id, so the demo shows both.
 * Everything the gateway requires gets a development default unless the environment sets it;
 * Redis is the one at REDIS_URL or a redis-server started here; the ledger's PostgreSQL the one at
 * DATABASE_URL or an embedded one (PGlite, data under .data/postgres/). Ctrl-C stops it all, in order.
 */

type Env = Readonly<Record<string, string | undefined>>;

/** Development values only; each is used only when the environment does not set the variable. */
export const DEV_DEFAULTS = Object.freeze({
  PROVIDER_ID: '1',
  ENGINE_API_KEY: 'dev-engine-key',
  ADMIN_USER: 'admin',
  ADMIN_PASSWORD: 'admin',
  DEMO_GAME: 'true',
  // One process prints the URLs to open; the per-request and per-wallet-call lines would bury them.
  LOG_LEVEL: 'warn',
});

/**
 * The second casino's simulator: other credentials, HMAC-SHA512 in base64 (the first is the
 * simulator's default, HMAC-SHA256 in hex), another provider id. Public development values.
 */
export const DEV_CASINO_B = Object.freeze({
  CASINO_B_BASIC_PASSWORD: 'gateway-b-password',
  CASINO_B_SIGNING_SECRET: 'dev-signing-secret-b',
});
const CASINO_B_USER = 'gateway-b';
const CASINO_B_PROVIDER_ID = '2';

/** The two casinos of the dev registry, in its order (the first is the home wallet). */
export const DEV_CASINOS = ['casino-a', 'casino-b'] as const;

/** The demo player of the printed launch URLs. */
export const DEMO_PLAYER = Object.freeze({ player_id: '1001', site_id: '1', currency: 'EUR', game_id: 'demo-slot' });

const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';
/** In-flight requests get this long at Ctrl-C before their connections are cut. */
const DRAIN_TIMEOUT_MS = 5_000;

export interface DevOptions {
  /** The environment to read; default process.env. */
  readonly env?: Env;
  /** Where the lines for the person at the terminal go; default console.log. */
  readonly print?: (line: string) => void;
  /** The demo game's dice, uniform in [0, 1); default Math.random. */
  readonly random?: () => number;
  /** Data folder of a redis-server started here; default .data/redis/ in the repository. */
  readonly redisDataDir?: string;
  /** Data folder of the embedded PostgreSQL started without DATABASE_URL; default .data/postgres/ in the repository. */
  readonly ledgerDataDir?: string;
}

/** One wallet of the registry dev serves. */
export interface DevCasino {
  readonly id: string;
  /** A ready launch for the demo player at this wallet: it redirects to the demo game. */
  readonly launch: string;
  /** Its in-process simulator; undefined when the environment names the wallets (WALLET_BASE_URL, WALLETS_FILE). */
  readonly simulator: string | undefined;
}

export interface DevUrls {
  readonly gateway: string;
  /** Every wallet of the registry, in its order. */
  readonly casinos: readonly DevCasino[];
  readonly console: string;
  readonly bullBoard: string;
  readonly metrics: string;
  readonly engineApi: string;
  readonly redis: string;
  /** Where the ledger lives: `embedded PostgreSQL …` or `DATABASE_URL`. */
  readonly ledger: string;
}

export interface RunningDev {
  readonly urls: DevUrls;
  readonly config: GatewayConfig;
  /** Gateway (server draining, then its queues and Redis) → worker → simulator → our redis-server. */
  close(): Promise<void>;
}

/** Unset and empty both count as unset, as in src/config/env.ts. */
function given(env: Env): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined && e[1] !== ''));
}

/** The gateway's and worker's environment: dev defaults, then the casinos' registry, then what was given. */
export function devEnvironment(env: Env, redisUrl: string, registry: { file: string } | undefined, embeddedLedgerUrl?: string): Record<string, string> {
  // Casino A's secrets are the single-wallet variables (the simulator's defaults unless set), casino B's its own.
  const simDefaults: Record<string, string> = registry === undefined ? {} : { ...SIM_DEFAULTS, ...DEV_CASINO_B, WALLETS_FILE: registry.file };
  return { ...DEV_DEFAULTS, ...simDefaults, ...given(env), REDIS_URL: redisUrl, ...(embeddedLedgerUrl === undefined ? {} : { DATABASE_URL: embeddedLedgerUrl }) };
}

/**
 * The dev registry: casino-a and casino-b at their simulators, one engine (ENGINE_API_KEY) on both.
 * Every secret is named by variable, so the file holds none; it lives in a private temporary folder.
 */
function writeDevRegistry(dir: string, a: { url: string; user: string; providerId: string }, b: { url: string }): string {
  const file = join(dir, 'wallets.json');
  const registry = {
    wallets: [
      {
        id: DEV_CASINOS[0],
        base_url: a.url,
        basic_user: a.user,
        basic_password: { env: 'WALLET_BASIC_PASSWORD' },
        signing_secret: { env: 'WALLET_SIGNING_SECRET' },
        provider_id: a.providerId,
      },
      {
        id: DEV_CASINOS[1],
        base_url: b.url,
        basic_user: CASINO_B_USER,
        basic_password: { env: 'CASINO_B_BASIC_PASSWORD' },
        signing_secret: { env: 'CASINO_B_SIGNING_SECRET' },
        signature_algo: 'sha512',
        signature_encoding: 'base64',
        provider_id: CASINO_B_PROVIDER_ID,
      },
    ],
    engines: [{ id: 'dev', keys: [{ env: 'ENGINE_API_KEY' }], wallets: [...DEV_CASINOS] }],
  };
  writeFileSync(file, JSON.stringify(registry, null, 2), { mode: 0o600 });
  return file;
}

export async function startDev(options: DevOptions = {}): Promise<RunningDev> {
  const env = options.env ?? process.env;
  const print = options.print ?? ((line: string) => console.log(line));
  const wanted = given(env).REDIS_URL ?? DEFAULT_REDIS_URL;
  const redisDataDir = options.redisDataDir ?? join(__dirname, '..', '..', '.data', 'redis');

  const closers = createClosers();
  return startWith(closers, async () => {
    const devRedis: DevRedis = await ensureDevRedis(wanted, redisDataDir);
    closers.defer('redis-server', () => devRedis.stop());

    // Two simulators stand in for two casinos' wallets unless the environment names the wallets.
    const fromEnv = given(env);
    const simulated = fromEnv.WALLET_BASE_URL === undefined && fromEnv.WALLETS_FILE === undefined;
    let registry: { file: string } | undefined;
    const sims = new Map<string, RunningSimulator>();
    if (simulated) {
      const simConfig = loadSimConfig(env);
      const casinoB = { ...DEV_CASINO_B, ...fromEnv };
      const a = await startSimulator({ ...sharedSimOptions(simConfig), port: simConfig.SIM_PORT, basicUser: simConfig.WALLET_BASIC_USER, basicPassword: simConfig.WALLET_BASIC_PASSWORD, signingSecret: simConfig.WALLET_SIGNING_SECRET, signatureAlgo: simConfig.WALLET_SIGNATURE_ALGO, signatureEncoding: simConfig.WALLET_SIGNATURE_ENCODING });
      closers.defer('simulator casino-a', () => a.close());
      const b = await startSimulator({
        ...sharedSimOptions(simConfig),
        // The port after casino A's (both free ports when SIM_PORT is 0).
        port: simConfig.SIM_PORT === 0 ? 0 : simConfig.SIM_PORT + 1,
        basicUser: CASINO_B_USER,
        basicPassword: casinoB.CASINO_B_BASIC_PASSWORD,
        signingSecret: casinoB.CASINO_B_SIGNING_SECRET,
        signatureAlgo: 'sha512',
        signatureEncoding: 'base64',
      });
      closers.defer('simulator casino-b', () => b.close());
      sims.set(DEV_CASINOS[0], a).set(DEV_CASINOS[1], b);
      const dir = mkdtempSync(join(tmpdir(), 'wgw-dev-'));
      closers.defer('dev registry', () => rmSync(dir, { recursive: true, force: true }));
      registry = { file: writeDevRegistry(dir, { url: a.url, user: simConfig.WALLET_BASIC_USER, providerId: fromEnv.PROVIDER_ID ?? DEV_DEFAULTS.PROVIDER_ID }, { url: b.url }) };
    }

    // The ledger: DATABASE_URL's PostgreSQL, or an embedded one (nothing to install).
    const ledgerDataDir = options.ledgerDataDir ?? join(__dirname, '..', '..', '.data', 'postgres');
    const embeddedLedger = given(env).DATABASE_URL === undefined ? await spawnEmbeddedPostgres(ledgerDataDir) : undefined;
    if (embeddedLedger !== undefined) closers.defer('embedded PostgreSQL', () => embeddedLedger.close());

    const devEnv = devEnvironment(env, devRedis.url, registry, embeddedLedger?.url);
    const config = loadGatewayConfig(devEnv);
    const workerConfig = loadWorkerConfig(devEnv);
    const logger = createLogger({ level: config.LOG_LEVEL, name: 'dev', traced: config.tracing !== undefined });
    // One registry for gateway and worker: this process's /metrics shows both sides.
    const metrics = createMetrics();

    const worker = await startWorker({ config: workerConfig, logger: logger.child({ component: 'worker' }), metrics });
    closers.defer('worker', () => worker.close());

    // Loopback only: the dev credentials must not open /admin to the network.
    const running = await startGateway(config, logger, { host: '127.0.0.1', metrics, random: options.random, drainTimeoutMs: DRAIN_TIMEOUT_MS });
    closers.defer('gateway', () => running.close());

    const gateway = running.url;
    // Each casino's own token: a wallet token names a player at one casino only.
    const launchOf = (id: string): string =>
      `${gateway}/launch${id === DEFAULT_WALLET_ID ? '' : `/${id}`}?${new URLSearchParams({ token: `dev-${randomUUID()}`, ...DEMO_PLAYER }).toString()}`;
    const urls: DevUrls = {
      gateway,
      casinos: config.registry.wallets.map((w) => ({ id: w.id, launch: launchOf(w.id), simulator: sims.get(w.id)?.url })),
      console: `${gateway}/admin`,
      bullBoard: `${gateway}${BULL_BOARD_PATH}`,
      metrics: `${gateway}/metrics`,
      engineApi: `${gateway}/engine/v1`,
      redis: devRedis.url,
      ledger: embeddedLedger === undefined ? 'PostgreSQL at DATABASE_URL' : `embedded PostgreSQL (PGlite) ${embeddedLedger.url}, data in ${ledgerDataDir}`,
    };
    for (const line of banner(urls, config, devRedis, given(env))) print(line);

    return { urls, config, close: () => closers.closeAll() };
  });
}

/** A URL as the banner shows it: a `user:password@` in it is never printed. */
function withoutUserinfo(text: string): string {
  const url = new URL(text);
  url.username = '';
  url.password = '';
  return url.toString();
}

/** What every simulator of dev shares: host, start balance, currency digits. */
function sharedSimOptions(c: SimConfig) {
  return { host: c.SIM_HOST, startBalance: c.SIM_START_BALANCE, currencyDigits: { ...c.CURRENCY_DIGITS } };
}

/** What to open. A credential is shown only when it is the public dev default, never one from the environment. */
function banner(urls: DevUrls, config: GatewayConfig, redis: DevRedis, fromEnv: Record<string, string>): string[] {
  const shown = (name: keyof typeof DEV_DEFAULTS, value: string): string => (fromEnv[name] === undefined ? value : `(${name} from the environment)`);
  const gameNote = config.DEMO_GAME ? `redirects to the demo game at ${DEMO_GAME_PATH}` : `redirects to GAME_URL_TEMPLATE (${config.GAME_URL_TEMPLATE})`;
  const admin = `user ${shown('ADMIN_USER', config.ADMIN_USER ?? '')}, password ${shown('ADMIN_PASSWORD', config.ADMIN_PASSWORD ?? '')}`;
  const casinos = urls.casinos.flatMap((c) => {
    const { client } = config.registry.wallets.find((w) => w.id === c.id)!;
    const signed = `HMAC-${client.WALLET_SIGNATURE_ALGO.toUpperCase()} ${client.WALLET_SIGNATURE_ENCODING}`;
    return [
      `  Play at ${c.id.padEnd(11)}${c.launch}`,
      c.simulator === undefined
        ? `                     wallet ${withoutUserinfo(client.WALLET_BASE_URL)} (from the environment)`
        : `                     wallet simulator ${c.simulator} (${signed})   admin API ${c.simulator}/__sim/ (docs/simulator.md)`,
    ];
  });
  const simulated = urls.casinos.some((c) => c.simulator !== undefined);
  return [
    '',
    `wallet gateway dev: gateway + worker + ${simulated ? `${urls.casinos.length} wallet simulators` : 'your wallets'} in one process`,
    '',
    ...casinos,
    `                     (a launch for player ${DEMO_PLAYER.player_id} at each casino; ${gameNote})`,
    `  Money console      ${urls.console}   ${admin} (every wallet; filter by wallet)`,
    `  Bull Board         ${urls.bullBoard}   ${admin}`,
    `  Metrics            ${urls.metrics}   (gateway and worker series together)`,
    `  Engine API         ${urls.engineApi}   Authorization: Bearer ${shown('ENGINE_API_KEY', config.registry.engines[0]?.keys[0] ?? '')}`,
    `  Redis              ${urls.redis}${redis.started ? `   (redis-server started here, AOF in ${redis.dataDir})` : ''}   prefix ${config.QUEUE_PREFIX}`,
    `  Ledger             ${urls.ledger}   history: ${urls.gateway}/admin/api/history/transactions`,
    '',
    `Logs at LOG_LEVEL=${config.LOG_LEVEL}${fromEnv.LOG_LEVEL === undefined ? ' (LOG_LEVEL=info shows every request and wallet call)' : ''}. Ctrl-C stops everything.`,
  ];
}

async function start(): Promise<Running> {
  const dev = await startDev();
  return {
    close: () => dev.close(),
    onSignal: (signal) => console.log(`${signal}: stopping (server, worker, queues, Redis${dev.urls.casinos.some((c) => c.simulator !== undefined) ? ', simulators' : ''})`),
    onStopped: (err) => {
      if (err !== undefined) console.error(`dev did not stop cleanly: ${(err as Error).message}`);
    },
  };
}

if (require.main === module) runUntilSignal('dev', start, { explained: (err) => err instanceof RedisUnavailableError });
