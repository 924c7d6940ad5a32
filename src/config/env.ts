import { availableParallelism } from 'node:os';
import { z } from 'zod';
import { ConfigError } from '../lib/config-error';
import { u64 } from '../lib/schemas';
import { DEFAULT_MAX_IN_FLIGHT, DEFAULT_WALLET_ID, hostOf, loadRegistryFile, registryOf, type Registry, type WalletEntry } from './registry';

/**
 * The environment, read and validated once at start into one frozen object. Nothing else in the
 * code base reads process.env. A bad variable stops the process with a message naming it; no
 * value is ever echoed.
 */

const port = z.coerce.number().int().min(0).max(65535);
const positiveInt = z.coerce.number().int().positive();
/** A delay handed to a timer: node runs one longer than 2^31−1 ms after 1 ms instead. */
const TIMER_MAX_MS = 2 ** 31 - 1;
const timerMs = positiveInt.max(TIMER_MAX_MS, `must be at most ${TIMER_MAX_MS} (the longest timer node keeps)`);
/** The wallet deadline also sizes the workers' job lock, 2 × it + 5 s (workers/worker.ts lockSettings): that must fit a timer too. */
const WALLET_TIMEOUT_MAX_MS = Math.floor((TIMER_MAX_MS - 5_000) / 2);
const nonEmpty = z.string().min(1);
/** One key, or two separated by a comma while a key is rotated (both are accepted). */
const engineKeys = z
  .string()
  .regex(/^[^,\s]+(,[^,\s]+)?$/, 'must be one key, or two separated by a comma (a rotation), without spaces')
  .transform((s) => Object.freeze(s.split(',')) as unknown as EngineKeys) as z.ZodType<EngineKeys, string>;
export type EngineKeys = readonly [string] | readonly [string, string];
const httpUrl = z
  .url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' })
  .transform((u) => u.replace(/\/+$/, ''));

/** `JPY:0,BHD:3` → { JPY: 0, BHD: 3 } */
const currencyDigits = z
  .string()
  .regex(/^([A-Z0-9]{2,10}:[0-9](,[A-Z0-9]{2,10}:[0-9])*)?$/, 'must look like JPY:0,BHD:3')
  .transform((s) =>
    Object.freeze(Object.fromEntries(s.split(',').filter(Boolean).map((pair) => [pair.split(':')[0], Number(pair.split(':')[1])]))),
  ) as z.ZodType<Readonly<Record<string, number>>, string>;

const list = z
  .string()
  .transform((s) => Object.freeze(s.split(',').map((x) => x.trim()).filter(Boolean)));

/** A non-negative decimal written as text (money stays exact). */
const decimalText = z.string().regex(/^(0|[1-9][0-9]*)(\.[0-9]+)?$/, 'must be a decimal like 1000.00');

const redisUrl = z.string().regex(/^rediss?:\/\//, 'must start with redis:// or rediss://');

const postgresUrl = z.string().regex(/^postgres(ql)?:\/\/[^\s]+$/, 'must start with postgres:// or postgresql://');

/** Key prefix; letters, digits, `-`, `_`, `.`, `{`, `}` so it can be a Redis Cluster hash tag like `{wgw}`. */
const queuePrefix = z.string().regex(/^[A-Za-z0-9_.{}-]+$/, 'letters, digits, - _ . { } only');

/** `host:port,host:port` → [{ host, port }] (Sentinel addresses). */
const hostPorts = z
  .string()
  .regex(/^[^\s,:]+:[0-9]{1,5}(,[^\s,:]+:[0-9]{1,5})*$/, 'must look like host:port,host:port')
  .transform((s) => Object.freeze(s.split(',').map((pair) => Object.freeze({ host: pair.slice(0, pair.lastIndexOf(':')), port: Number(pair.slice(pair.lastIndexOf(':') + 1)) }))));

const shared = {
  REDIS_URL: redisUrl.default('redis://127.0.0.1:6379'),
  /** A Sentinel-managed primary instead of REDIS_URL (contract 9): the sentinels and the primary's name there. */
  REDIS_SENTINELS: hostPorts.optional(),
  REDIS_SENTINEL_NAME: z.string().regex(/^[A-Za-z0-9_.-]+$/, 'letters, digits, - _ . only').optional(),
  /** A Redis Cluster instead of REDIS_URL (contract 9): any of its nodes, the client learns the rest. */
  REDIS_CLUSTER_NODES: hostPorts.optional(),
  /**
   * Shards the keys and queues are split into (each one hash slot, by player); fixed at deploy
   * time (docs/operators.md). Default 1, or 16 with REDIS_CLUSTER_NODES.
   */
  REDIS_SHARDS: z.coerce.number().int().min(1).max(256).optional(),
  /** Replicas that must acknowledge (WAIT) an answer's writes before the engine gets it; 0 = none asked. */
  REDIS_MIN_REPLICAS: z.coerce.number().int().min(0).max(16).default(0),
  REDIS_WAIT_MS: timerMs.default(500),
  QUEUE_PREFIX: queuePrefix.default('wgw'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** The registry of wallets and engines (contract 11); unset: the single-wallet variables below. */
  WALLETS_FILE: z.string().optional(),
  /** PostgreSQL of the ledger (contract 12); unset: no ledger (npm run dev and the tests start an embedded one). */
  DATABASE_URL: postgresUrl.optional(),
  /** How long the ledger keeps history; older months are dropped whole. */
  LEDGER_RETENTION_DAYS: positiveInt.max(36_500).default(400),
};

/** The one wallet of a deployment without WALLETS_FILE (wallet `default`). */
const wallet = {
  WALLET_BASE_URL: httpUrl,
  WALLET_BASIC_USER: nonEmpty,
  WALLET_BASIC_PASSWORD: nonEmpty,
  WALLET_SIGNING_SECRET: nonEmpty,
  WALLET_SIGNATURE_ALGO: z.enum(['sha256', 'sha512']).default('sha256'),
  WALLET_SIGNATURE_ENCODING: z.enum(['hex', 'base64']).default('hex'),
  WALLET_TIMEOUT_MS: positiveInt.max(WALLET_TIMEOUT_MAX_MS, `must be at most ${WALLET_TIMEOUT_MAX_MS} (twice it plus 5 s is the workers' job lock, a timer)`).default(5000),
  WALLET_HOST_HEADER: z.string().optional(),
  PROVIDER_ID: u64,
  RETRY_DELAY_UNIT: z.enum(['ms', 's']).default('ms'),
};

/** How every wallet client connects, whichever wallet it calls. */
const transport = {
  /** Keep-alive connections to the wallet (HTTP/1.1); with HTTP/2 one connection multiplexes. */
  WALLET_CONNECTIONS: positiveInt.default(64),
  /** With an https wallet, offer HTTP/2 in ALPN; false keeps HTTP/1.1 over TLS (WALLET_CONNECTIONS connections). */
  WALLET_HTTP2: z.stringbool().default(true),
  /** Accept a self-signed wallet certificate (tests and the bench only). */
  WALLET_TLS_INSECURE: z.stringbool().default(false),
};

/** TOKEN_SESSION_CAP's default (tests open sessions with it too). */
export const DEFAULT_TOKEN_SESSION_CAP = 100;

const gatewayOnly = {
  PORT: port.default(8080),
  ADMIN_USER: nonEmpty.optional(),
  ADMIN_PASSWORD: nonEmpty.optional(),
  GAME_URL_TEMPLATE: z.string().default('/demo-game?session={session_id}'),
  /** Idle lifetime of a gateway session, renewed on every engine call. */
  SESSION_TTL_SECONDS: positiveInt.default(24 * 3600),
  /**
   * Sessions one wallet token may hold (open, or ended and waiting for its terminate; an expired one
   * is dropped): a launch beyond is refused. Bounds every step that walks a token's sessions.
   */
  TOKEN_SESSION_CAP: positiveInt.max(1000).default(DEFAULT_TOKEN_SESSION_CAP),
  /** Launches of one wallet token a minute; more are refused before the wallet is asked. */
  TOKEN_LAUNCHES_PER_MINUTE: positiveInt.default(30),
  /** How long settled transaction records are kept for idempotency and lookup. */
  RECORD_RETENTION_SECONDS: positiveInt.default(7 * 24 * 3600),
  /** Fraction digits per currency; a currency not listed has DEFAULT_CURRENCY_DIGITS. */
  CURRENCY_DIGITS: currencyDigits.prefault(''),
  DEFAULT_CURRENCY_DIGITS: z.coerce.number().int().min(0).max(8).default(2),
  /** Games that bet several times per round (each bet goes to the wallet in its own round). */
  MULTI_BET_GAMES: list.prefault(''),
  GATEWAY_PROCESSES: positiveInt.default(availableParallelism()),
  /** Serve the demo game page at /demo-game. */
  DEMO_GAME: z.stringbool().default(false),
  /** Operators' console: a bet with no closing call older than this is a stale round. */
  STALE_ROUND_SECONDS: positiveInt.default(3600),
  /** Operators' console: a win at or over this amount is flagged (unset: not used). */
  BIG_WIN_AMOUNT: decimalText.optional(),
  /** Operators' console: a win at or over this many times its bet is flagged (unset: not used). */
  BIG_WIN_MULTIPLIER: decimalText.default('100'),
  /** Operators' console: fresh wallet `status` calls per second an export may make. */
  EXPORT_STATUS_PER_SECOND: positiveInt.default(20),
};

const workerOnly = {
  WORKER_CONCURRENCY: positiveInt.default(50),
  /** A dead credit/rollback is asked about with wallet `status` this often, for DEAD_CHECK_WINDOW_MS. */
  DEAD_CHECK_INTERVAL_MS: timerMs.default(15 * 60 * 1000),
  DEAD_CHECK_WINDOW_MS: positiveInt.default(24 * 3600 * 1000),
  /** How often the sweeper looks for pending records with no job behind them. */
  SWEEP_INTERVAL_MS: timerMs.default(10_000),
  /** A ledger outbox entry read by a worker and not acknowledged this long is taken over by another (its reader is taken for dead). */
  LEDGER_CLAIM_IDLE_MS: timerMs.default(60_000),
};

/** Read by the worker only. */
const workerQueueOnly = {
  /**
   * Retry jobs started per second at most, over all workers (BullMQ's own limiter): the ceiling at
   * which a backlog drains after a wallet outage. 0 = none.
   */
  WALLET_RETRY_RATE: z.coerce.number().int().min(0).default(500),
};

/** Read by the worker process only: the gateway's own /metrics already serves its port. */
const workerProcessOnly = {
  /** The worker's GET /metrics and /healthz; unset = no server (several workers may share a host). 0 = any free port. */
  WORKER_METRICS_PORT: port.optional(),
};

/** The one engine of a deployment without WALLETS_FILE (engine `default`, on wallet `default`). */
const engine = { ENGINE_API_KEY: engineKeys };

const gatewaySchema = z.object({ ...shared, ...transport, ...gatewayOnly, ...workerOnly });
const workerSchema = z.object({
  ...shared,
  ...transport,
  ...workerOnly,
  ...workerQueueOnly,
  ...workerProcessOnly,
  RECORD_RETENTION_SECONDS: gatewayOnly.RECORD_RETENTION_SECONDS,
});

/**
 * The standard OTEL_* variables the gateway and the worker read (contract 13). Tracing is off unless
 * OTEL_EXPORTER_OTLP_ENDPOINT (or its traces-only form) is set; OTLP over HTTP only, as JSON or
 * protobuf. OTEL_EXPORTER_OTLP_HEADERS may hold a collector's credentials: its format is checked,
 * its value never shown, and the exporter reads it itself.
 */
const otlpHeaders = z.string().regex(/^\s*[^=,\s]+\s*=[^,]*(,\s*[^=,\s]+\s*=[^,]*)*$/, 'must look like key=value,key=value');
const otlpProtocol = z.enum(['http/json', 'http/protobuf'], { error: 'must be http/json or http/protobuf (OTLP over HTTP; gRPC is not offered)' });
const tracingSchema = z.object({
  OTEL_SDK_DISABLED: z.stringbool().default(false),
  OTEL_EXPORTER_OTLP_ENDPOINT: httpUrl.optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: httpUrl.optional(),
  OTEL_EXPORTER_OTLP_PROTOCOL: otlpProtocol.optional(),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: otlpProtocol.optional(),
  OTEL_EXPORTER_OTLP_HEADERS: otlpHeaders.optional(),
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: otlpHeaders.optional(),
  OTEL_EXPORTER_OTLP_TIMEOUT: timerMs.optional(),
  OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: timerMs.optional(),
  OTEL_SERVICE_NAME: z.string().min(1).optional(),
  OTEL_RESOURCE_ATTRIBUTES: z.string().optional(),
  OTEL_TRACES_SAMPLER: z
    .enum(['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'])
    .default('parentbased_always_on'),
  OTEL_TRACES_SAMPLER_ARG: z.coerce.number().min(0).max(1).optional(),
  OTEL_BSP_SCHEDULE_DELAY: z.coerce.number().int().min(0).max(TIMER_MAX_MS).default(5000),
  OTEL_BSP_EXPORT_TIMEOUT: timerMs.default(30_000),
  OTEL_BSP_MAX_QUEUE_SIZE: positiveInt.default(2048),
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: positiveInt.default(512),
});

/** Tracing as configured: undefined when off (no endpoint, or OTEL_SDK_DISABLED=true). */
export interface TracingConfig {
  /** The traces URL the exporter posts to (`…/v1/traces` of OTEL_EXPORTER_OTLP_ENDPOINT, or the traces-only endpoint as given). */
  readonly tracesUrl: string;
  readonly protocol: 'http/json' | 'http/protobuf';
  /** OTEL_SERVICE_NAME, or the process's own name. */
  readonly serviceName: string;
  readonly sampler: z.output<typeof tracingSchema>['OTEL_TRACES_SAMPLER'];
  /** The ratio of the ratio samplers (default 1). */
  readonly samplerRatio: number;
  readonly exportTimeoutMs: number | undefined;
  readonly batch: { readonly scheduledDelayMillis: number; readonly exportTimeoutMillis: number; readonly maxQueueSize: number; readonly maxExportBatchSize: number };
}

function tracingOf(env: Env, defaultServiceName: string): TracingConfig | undefined {
  const t = parseWith(tracingSchema, env);
  const tracesUrl = t.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (t.OTEL_EXPORTER_OTLP_ENDPOINT === undefined ? undefined : `${t.OTEL_EXPORTER_OTLP_ENDPOINT}/v1/traces`);
  if (t.OTEL_SDK_DISABLED || tracesUrl === undefined) return undefined;
  if (t.OTEL_BSP_MAX_EXPORT_BATCH_SIZE > t.OTEL_BSP_MAX_QUEUE_SIZE) {
    throw new ConfigError('invalid configuration:\n  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: must be at most OTEL_BSP_MAX_QUEUE_SIZE');
  }
  return Object.freeze({
    tracesUrl,
    protocol: t.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? t.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf',
    serviceName: t.OTEL_SERVICE_NAME ?? defaultServiceName,
    sampler: t.OTEL_TRACES_SAMPLER,
    samplerRatio: t.OTEL_TRACES_SAMPLER_ARG ?? 1,
    exportTimeoutMs: t.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT ?? t.OTEL_EXPORTER_OTLP_TIMEOUT,
    batch: Object.freeze({
      scheduledDelayMillis: t.OTEL_BSP_SCHEDULE_DELAY,
      exportTimeoutMillis: t.OTEL_BSP_EXPORT_TIMEOUT,
      maxQueueSize: t.OTEL_BSP_MAX_QUEUE_SIZE,
      maxExportBatchSize: t.OTEL_BSP_MAX_EXPORT_BATCH_SIZE,
    }),
  });
}

/** The service names a process reports when OTEL_SERVICE_NAME is unset. */
export const SERVICE_NAMES = { gateway: 'wallet-gateway', worker: 'wallet-gateway-worker' } as const;

/** What the environment gives and what follows from it: the registry, the shard count, tracing. */
interface Derived {
  /** The wallets and engines: WALLETS_FILE's, or wallet and engine `default` of the single-wallet variables. */
  readonly registry: Registry;
  /** REDIS_SHARDS, or its default for the topology. */
  readonly redisShards: number;
  /** The OTEL_* variables; undefined: no tracing. */
  readonly tracing: TracingConfig | undefined;
  /**
   * Reads and validates WALLETS_FILE again, as at start (a reload, contract 11); throws ConfigError
   * naming the field. Undefined without WALLETS_FILE: the single-wallet variables do not change.
   */
  readonly readRegistry?: () => Registry;
}

export type GatewayConfig = Readonly<z.output<typeof gatewaySchema>> & Derived;
export type WorkerConfig = Readonly<z.output<typeof workerSchema>> & Derived;
export type { WalletSettings } from './registry';

export { ConfigError };

type Env = Readonly<Record<string, string | undefined>>;

/**
 * Names the variable and what is wrong, never the value: a URL may carry credentials
 * (`redis://:password@…`, `https://user:secret@…`) and a secret may sit in the wrong variable.
 * The messages are the schemas' own, which do not quote the input.
 */
function describe(error: z.ZodError, env: Env): string {
  const lines = error.issues.map((issue) => {
    const variable = String(issue.path[0] ?? '(environment)');
    const shown = env[variable] === undefined ? 'missing' : 'the value is not shown';
    return `  ${variable}: ${issue.message} (${shown})`;
  });
  return `invalid configuration:\n${lines.join('\n')}`;
}

/** Empty strings count as unset, so `FOO=` in a compose file falls back to the default. */
function clean(env: Env): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined && e[1] !== ''));
}

function parseWith<S extends z.ZodType>(schema: S, env: Env): z.output<S> {
  const result = schema.safeParse(clean(env));
  if (!result.success) throw new ConfigError(describe(result.error, env));
  return result.data;
}

/** The shard count with a cluster when REDIS_SHARDS is unset: room for up to 16 masters. */
export const CLUSTER_DEFAULT_SHARDS = 16;

interface RedisTopologyFields {
  readonly REDIS_SENTINELS?: unknown;
  readonly REDIS_SENTINEL_NAME?: unknown;
  readonly REDIS_CLUSTER_NODES?: unknown;
  readonly REDIS_SHARDS?: number;
  readonly QUEUE_PREFIX: string;
}

/** Rules between the Redis variables (each one alone is checked by the schema); returns the shard count. */
function checkRedisTopology(parsed: RedisTopologyFields): number {
  if ((parsed.REDIS_SENTINELS === undefined) !== (parsed.REDIS_SENTINEL_NAME === undefined)) {
    throw new ConfigError('invalid configuration:\n  REDIS_SENTINELS, REDIS_SENTINEL_NAME: set both or neither');
  }
  const cluster = parsed.REDIS_CLUSTER_NODES !== undefined;
  if (cluster && parsed.REDIS_SENTINELS !== undefined) {
    throw new ConfigError('invalid configuration:\n  REDIS_CLUSTER_NODES, REDIS_SENTINELS: one topology or the other');
  }
  const shards = parsed.REDIS_SHARDS ?? (cluster ? CLUSTER_DEFAULT_SHARDS : 1);
  // The shards' own hash tags hold the prefix; a brace in it would end a tag early.
  if ((cluster || shards > 1) && /[{}]/.test(parsed.QUEUE_PREFIX)) {
    throw new ConfigError('invalid configuration:\n  QUEUE_PREFIX: no { } with REDIS_CLUSTER_NODES or REDIS_SHARDS > 1 (each shard adds its own hash tag)');
  }
  return shards;
}

type SingleWallet = z.output<z.ZodObject<typeof wallet>>;

/** Wallet `default` of the single-wallet variables. */
function singleWallet(w: SingleWallet, t: z.output<z.ZodObject<typeof transport>>, currencyDigits: Readonly<Record<string, number>>): WalletEntry {
  return Object.freeze({
    id: DEFAULT_WALLET_ID,
    client: Object.freeze({
      WALLET_BASE_URL: w.WALLET_BASE_URL,
      WALLET_BASIC_USER: w.WALLET_BASIC_USER,
      WALLET_BASIC_PASSWORD: w.WALLET_BASIC_PASSWORD,
      WALLET_SIGNING_SECRET: w.WALLET_SIGNING_SECRET,
      WALLET_SIGNATURE_ALGO: w.WALLET_SIGNATURE_ALGO,
      WALLET_SIGNATURE_ENCODING: w.WALLET_SIGNATURE_ENCODING,
      WALLET_TIMEOUT_MS: w.WALLET_TIMEOUT_MS,
      WALLET_CONNECTIONS: t.WALLET_CONNECTIONS,
      WALLET_HTTP2: t.WALLET_HTTP2,
      WALLET_TLS_INSECURE: t.WALLET_TLS_INSECURE,
      walletHostHeader: w.WALLET_HOST_HEADER ?? hostOf(w.WALLET_BASE_URL),
    }),
    providerId: w.PROVIDER_ID,
    retryDelayUnit: w.RETRY_DELAY_UNIT,
    currencyDigits,
    maxInFlight: DEFAULT_MAX_IN_FLIGHT,
  });
}

/**
 * The registry: WALLETS_FILE's when set (the single-wallet variables are then not read), else one
 * wallet `default` from the single-wallet variables, parsed in the same pass as the rest of the
 * environment so one message names every bad variable. `withEngine`: the gateway's engine `default`
 * holds ENGINE_API_KEY; the worker serves no engine.
 */
function loadWith<S extends z.ZodObject>(schema: S, env: Env, withEngine: boolean, currencyDigitsOf: (parsed: z.output<S>) => Readonly<Record<string, number>>): z.output<S> & { registry: Registry; readRegistry?: () => Registry } {
  const file = clean(env).WALLETS_FILE;
  if (file !== undefined) {
    const parsed = parseWith(schema, env);
    const t = parsed as unknown as z.output<z.ZodObject<typeof transport>>;
    const readRegistry = (): Registry => loadRegistryFile(file, env, { ...pickTransport(t), currencyDigits: currencyDigitsOf(parsed), maxTimeoutMs: WALLET_TIMEOUT_MAX_MS });
    return { ...parsed, registry: readRegistry(), readRegistry };
  }
  const single = withEngine ? schema.extend({ ...wallet, ...engine }) : schema.extend(wallet);
  const parsed = parseWith(single, env) as z.output<S> & SingleWallet & Partial<z.output<z.ZodObject<typeof engine>>>;
  const entry = singleWallet(parsed, parsed as unknown as z.output<z.ZodObject<typeof transport>>, currencyDigitsOf(parsed));
  const engines = parsed.ENGINE_API_KEY === undefined ? [] : [Object.freeze({ id: DEFAULT_WALLET_ID, keys: parsed.ENGINE_API_KEY, wallets: Object.freeze([DEFAULT_WALLET_ID]) })];
  const rest = Object.fromEntries(Object.entries(parsed).filter(([name]) => !(name in wallet) && !(name in engine))) as z.output<S>;
  return { ...rest, registry: registryOf([entry], engines) };
}

function pickTransport(t: z.output<z.ZodObject<typeof transport>>) {
  return { WALLET_CONNECTIONS: t.WALLET_CONNECTIONS, WALLET_HTTP2: t.WALLET_HTTP2, WALLET_TLS_INSECURE: t.WALLET_TLS_INSECURE };
}

export function loadGatewayConfig(env: Env = process.env): GatewayConfig {
  const parsed = loadWith(gatewaySchema, env, true, (p) => p.CURRENCY_DIGITS);
  const redisShards = checkRedisTopology(parsed);
  if ((parsed.ADMIN_USER === undefined) !== (parsed.ADMIN_PASSWORD === undefined)) {
    throw new ConfigError('invalid configuration:\n  ADMIN_USER, ADMIN_PASSWORD: set both or neither');
  }
  return Object.freeze({ ...parsed, redisShards, tracing: tracingOf(env, SERVICE_NAMES.gateway) });
}

export function loadWorkerConfig(env: Env = process.env): WorkerConfig {
  const parsed = loadWith(workerSchema, env, false, () => ({}));
  const redisShards = checkRedisTopology(parsed);
  return Object.freeze({ ...parsed, redisShards, tracing: tracingOf(env, SERVICE_NAMES.worker) });
}

/** The PostgreSQL server `npm run soak -- --ledger-outage` makes its own database on: DATABASE_URL, if set. */
export function loadSoakDatabaseServer(env: Env = process.env): string | undefined {
  return parseWith(z.object({ DATABASE_URL: postgresUrl.optional() }), env).DATABASE_URL;
}

/**
 * What `npm run wallet-check` reads: the registry, WALLETS_FILE's or wallet `default` of the
 * single-wallet variables, parsed exactly as the gateway and the worker parse it.
 */
export function loadWalletRegistry(env: Env = process.env): Registry {
  return loadWith(z.object(transport), env, false, () => ({})).registry;
}

/** The simulator reads the same WALLET_* variables; unset ones get printed defaults. */
export const SIM_DEFAULTS = Object.freeze({
  WALLET_BASIC_USER: 'gateway',
  WALLET_BASIC_PASSWORD: 'gateway-password',
  WALLET_SIGNING_SECRET: 'dev-signing-secret',
});

const simSchema = z.object({
  SIM_PORT: port.default(8090),
  SIM_HOST: z.string().default('127.0.0.1'),
  SIM_START_BALANCE: decimalDefault(),
  SIM_TLS_CERT: z.string().optional(),
  SIM_TLS_KEY: z.string().optional(),
  SIM_CHAOS_SEED: z.coerce.number().int().optional(),
  /** Share of debit/credit/rollback calls chaos hits when SIM_CHAOS_SEED is set. */
  SIM_CHAOS_RATE: z.coerce.number().min(0).max(1).default(0.2),
  /** Host the health check must carry; default: the listen host:port, 127.0.0.1:port or localhost:port. */
  SIM_EXPECTED_HOST: z.string().optional(),
  /** The same variable as the gateway's, so both agree on each currency's minor units. */
  CURRENCY_DIGITS: gatewayOnly.CURRENCY_DIGITS,
  WALLET_BASIC_USER: nonEmpty.default(SIM_DEFAULTS.WALLET_BASIC_USER),
  WALLET_BASIC_PASSWORD: nonEmpty.default(SIM_DEFAULTS.WALLET_BASIC_PASSWORD),
  WALLET_SIGNING_SECRET: nonEmpty.default(SIM_DEFAULTS.WALLET_SIGNING_SECRET),
  WALLET_SIGNATURE_ALGO: wallet.WALLET_SIGNATURE_ALGO,
  WALLET_SIGNATURE_ENCODING: wallet.WALLET_SIGNATURE_ENCODING,
  LOG_LEVEL: shared.LOG_LEVEL,
});

function decimalDefault() {
  return decimalText.default('1000.00');
}

export type SimConfig = Readonly<z.output<typeof simSchema>>;

export function loadSimConfig(env: Env = process.env): SimConfig {
  return Object.freeze(parseWith(simSchema, env));
}

/**
 * The wallets of WALLETS_FILE for `npm run sim` (one simulator each), or undefined without the
 * file. The file is validated whole, as the gateway does.
 */
export function loadSimWallets(env: Env = process.env): readonly WalletEntry[] | undefined {
  const file = clean(env).WALLETS_FILE;
  if (file === undefined) return undefined;
  const { CURRENCY_DIGITS } = parseWith(z.object({ CURRENCY_DIGITS: gatewayOnly.CURRENCY_DIGITS }), env);
  const transport = { WALLET_CONNECTIONS: 1, WALLET_HTTP2: false, WALLET_TLS_INSECURE: false };
  return loadRegistryFile(file, env, { ...transport, currencyDigits: CURRENCY_DIGITS, maxTimeoutMs: WALLET_TIMEOUT_MAX_MS }).wallets;
}

/** The WALLET_* variables the simulator fills from SIM_DEFAULTS (unset or empty in `env`). */
export function simDefaultedVariables(env: Env = process.env): (keyof typeof SIM_DEFAULTS)[] {
  const given = clean(env);
  return (Object.keys(SIM_DEFAULTS) as (keyof typeof SIM_DEFAULTS)[]).filter((name) => given[name] === undefined);
}
