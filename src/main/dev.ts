import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { loadGatewayConfig, loadSimConfig, loadWorkerConfig, type GatewayConfig } from '../config/env';
import { BULL_BOARD_PATH } from '../http/admin';
import { DEMO_GAME_PATH } from '../http/demo-game';
import { createClosers, runUntilSignal, startWith, type Running } from '../lib/lifecycle';
import { createLogger } from '../observability/logger';
import { createMetrics } from '../observability/metrics';
import { startSimulator, type RunningSimulator } from '../sim';
import { startWorker } from '../../workers/worker';
import { RedisUnavailableError, ensureDevRedis, type DevRedis } from './dev-redis';
import { startGateway } from './gateway';

/**
 * `npm run dev`: the gateway, one worker and the wallet simulator in this one process, for a first
 * look. Everything the gateway requires gets a development default unless the environment sets it;
 * Redis is the one at REDIS_URL or a redis-server started here. Ctrl-C stops it all, in order.
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

/** The demo player of the printed launch URL. */
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
}

export interface DevUrls {
  readonly gateway: string;
  /** A ready launch for the demo player: it redirects to the demo game. */
  readonly launch: string;
  readonly bullBoard: string;
  readonly metrics: string;
  readonly engineApi: string;
  /** The in-process simulator; undefined when WALLET_BASE_URL names another wallet. */
  readonly simulator: string | undefined;
  readonly redis: string;
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

/** The gateway's and worker's environment: dev defaults, then the simulator's, then what was given. */
export function devEnvironment(env: Env, redisUrl: string, sim: { url: string; user: string; password: string; secret: string } | undefined): Record<string, string> {
  const simDefaults: Record<string, string> = sim === undefined ? {} : { WALLET_BASE_URL: sim.url, WALLET_BASIC_USER: sim.user, WALLET_BASIC_PASSWORD: sim.password, WALLET_SIGNING_SECRET: sim.secret };
  return { ...DEV_DEFAULTS, ...simDefaults, ...given(env), REDIS_URL: redisUrl };
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

    // The simulator stands in for the wallet unless the environment names one.
    let sim: RunningSimulator | undefined;
    let simEnv: Parameters<typeof devEnvironment>[2];
    if (given(env).WALLET_BASE_URL === undefined) {
      const simConfig = loadSimConfig(env);
      const simulator = await startSimulator({
        port: simConfig.SIM_PORT,
        host: simConfig.SIM_HOST,
        basicUser: simConfig.WALLET_BASIC_USER,
        basicPassword: simConfig.WALLET_BASIC_PASSWORD,
        signingSecret: simConfig.WALLET_SIGNING_SECRET,
        signatureAlgo: simConfig.WALLET_SIGNATURE_ALGO,
        signatureEncoding: simConfig.WALLET_SIGNATURE_ENCODING,
        startBalance: simConfig.SIM_START_BALANCE,
        currencyDigits: { ...simConfig.CURRENCY_DIGITS },
      });
      closers.defer('simulator', () => simulator.close());
      sim = simulator;
      simEnv = { url: sim.url, user: simConfig.WALLET_BASIC_USER, password: simConfig.WALLET_BASIC_PASSWORD, secret: simConfig.WALLET_SIGNING_SECRET };
    }

    const devEnv = devEnvironment(env, devRedis.url, simEnv);
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
    const launch = `${gateway}/launch?${new URLSearchParams({ token: `dev-${randomUUID()}`, ...DEMO_PLAYER }).toString()}`;
    const urls: DevUrls = {
      gateway,
      launch,
      bullBoard: `${gateway}${BULL_BOARD_PATH}`,
      metrics: `${gateway}/metrics`,
      engineApi: `${gateway}/engine/v1`,
      simulator: sim?.url,
      redis: devRedis.url,
    };
    for (const line of banner(urls, config, devRedis, given(env))) print(line);

    return { urls, config, close: () => closers.closeAll() };
  });
}

/** What to open. A credential is shown only when it is the public dev default, never one from the environment. */
function banner(urls: DevUrls, config: GatewayConfig, redis: DevRedis, fromEnv: Record<string, string>): string[] {
  const shown = (name: keyof typeof DEV_DEFAULTS, value: string): string => (fromEnv[name] === undefined ? value : `(${name} from the environment)`);
  const gameNote = config.DEMO_GAME ? `redirects to the demo game at ${DEMO_GAME_PATH}` : `redirects to GAME_URL_TEMPLATE (${config.GAME_URL_TEMPLATE})`;
  return [
    '',
    'wallet gateway dev: gateway + worker + wallet simulator in one process',
    '',
    `  Play               ${urls.launch}`,
    `                     (a launch for player ${DEMO_PLAYER.player_id}; ${gameNote})`,
    `  Bull Board         ${urls.bullBoard}   user ${shown('ADMIN_USER', config.ADMIN_USER ?? '')}, password ${shown('ADMIN_PASSWORD', config.ADMIN_PASSWORD ?? '')}`,
    `  Metrics            ${urls.metrics}   (gateway and worker series together)`,
    `  Engine API         ${urls.engineApi}   Authorization: Bearer ${shown('ENGINE_API_KEY', config.registry.engines[0]?.keys[0] ?? '')}`,
    urls.simulator === undefined
      ? `  Wallet             ${config.registry.wallets[0]!.client.WALLET_BASE_URL} (WALLET_BASE_URL from the environment)`
      : `  Wallet simulator   ${urls.simulator}   admin API ${urls.simulator}/__sim/ (docs/simulator.md)`,
    `  Redis              ${urls.redis}${redis.started ? `   (redis-server started here, AOF in ${redis.dataDir})` : ''}   prefix ${config.QUEUE_PREFIX}`,
    '',
    `Logs at LOG_LEVEL=${config.LOG_LEVEL}${fromEnv.LOG_LEVEL === undefined ? ' (LOG_LEVEL=info shows every request and wallet call)' : ''}. Ctrl-C stops everything.`,
  ];
}

async function start(): Promise<Running> {
  const dev = await startDev();
  return {
    close: () => dev.close(),
    onSignal: (signal) => console.log(`${signal}: stopping (server, worker, queues, Redis${dev.urls.simulator ? ', simulator' : ''})`),
    onStopped: (err) => {
      if (err !== undefined) console.error(`dev did not stop cleanly: ${(err as Error).message}`);
    },
  };
}

if (require.main === module) runUntilSignal('dev', start, { explained: (err) => err instanceof RedisUnavailableError });
