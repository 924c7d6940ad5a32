import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, constants as osConstants, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Redis from 'ioredis';
import pg from 'pg';
import { Agent, request } from 'undici';
import { spawnEmbeddedPostgres } from '../src/ledger/embedded';
import { keysFor } from '../src/store/keys';
import { Code } from '../src/wallet/codes';
import { Child, baseEnv } from '../src/lib/child';
import { freePort } from '../src/lib/free-port';
import { RedisServer } from '../src/lib/redis-server';
import { selfSignedCert } from '../src/lib/self-signed-cert';
import { waitFor, type WaitOptions } from '../src/lib/wait-for';
import { serverEnv, simulatorEnv } from './env';
import { LoadTally, SLOW_MS, runLoad, type LoadResult, type LoadSpec } from './load';
import { PARTS, parseOptions, type BenchOptions, type Part } from './options';
import { cpuMicros, cpuTime, ioCounters, peakConnections, processTree, rssMiB, type IoCounters } from './proc';
import { summariseAllocations, summariseProfiles } from './profile';
import { BoxWatch, explainStalls, readRedisEvents, readStallMonitor, watchRedis } from './stalls';
import { derive, render, writeReport, type BenchReport, type CaseIo, type CaseResult, type LedgerSide, type SliceResult, type WorkerResult } from './report';
import {
  Ids,
  PlacedQueue,
  authenticateBody,
  directRequests,
  engineRequests,
  identities,
  walletHeaders,
  type DirectOp,
  type EngineOp,
  type WalletIdentity,
} from './requests';

/**
 * `npm run bench`: the simulator, a private Redis, the reference server, the gateway and a worker
 * as separate processes on loopback; fixed autocannon loads against each; a table on stdout and
 * bench/results/<date>-<sha>.json. bench/README.md explains how to read it.
 */
const ROOT = resolve(__dirname, '..');
const SIM_ENTRY = 'src/sim/main.ts';
const GATEWAY_ENTRY = 'dist/src/main/gateway.js';
const WORKER_ENTRY = 'dist/workers/main.js';
const START_TIMEOUT_MS = 30_000;
/** The fixed-rate latency cases run at this share of the reference's saturated req/s. */
const FIXED_RATE_SHARE = 0.25;
const FIXED_RATE_SUFFIX = '@25%';
/** Redis's slow log and latency monitor record what took at least this long during the fixed-rate case. */
const STALL_REDIS_MS = 10;
const STALL_MONITOR = join(ROOT, 'bench', 'stall-monitor.cjs');

// Setup calls (launch, admin API, authenticate) accept the simulator's throwaway certificate.
const setupAgent = new Agent({ connect: { rejectUnauthorized: false }, connections: 16 });

const cleanups: (() => Promise<void>)[] = [];
function onCleanup(fn: () => Promise<void>): void {
  cleanups.push(fn);
}
let cleaning: Promise<void> | undefined;
/** Runs every cleanup once, newest first; a second call (a signal during the normal end) waits for the same. */
function cleanupAll(): Promise<void> {
  cleaning ??= (async () => {
    while (cleanups.length > 0) {
      const fn = cleanups.pop() as () => Promise<void>;
      await fn().catch((err: unknown) => console.error(`cleanup: ${(err as Error).message}`));
    }
    await setupAgent.close();
  })();
  return cleaning;
}

function log(line: string): void {
  process.stderr.write(`[bench] ${line}\n`);
}

async function http(method: string, url: string, body?: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
  const res = await request(url, { method: method as 'GET', body, headers, dispatcher: setupAgent });
  return { status: res.statusCode, text: await res.body.text() };
}

/** The last few KiB a process wrote (stderr; stdout too with --verbose), for a start that fails. */
const TAIL_BYTES = 8 * 1024;

/** A child process stopped at the end of the run; only PATH and the like of this environment leak in. */
async function service(name: string, args: string[], env: Record<string, string>, options: BenchOptions): Promise<Child> {
  // A gateway logs a line per request: stdout goes to /dev/null unless asked for.
  const s = new Child({ name, args, env: { ...baseEnv(), ...env }, keepStdout: options.verbose, keepBytes: TAIL_BYTES });
  onCleanup(() => s.stop());
  services.push(s);
  await s.start();
  return s;
}

/** Every process the bench started: what the box watch counts as the bench's own. */
const services: Child[] = [];

/** Waiting on a service: give up when it exited, and say what it wrote. */
function watching(s: Child): WaitOptions {
  return { intervalMs: 50, alive: () => s.isRunning(), context: () => `${s.name} said:\n${s.output()}` };
}

// --- simulator ----------------------------------------------------------------------------

interface Sim {
  url: string;
  port: number;
  service: Child;
}

async function startSim(options: BenchOptions, tlsFiles?: { cert: string; key: string }): Promise<Sim> {
  const port = await freePort();
  const env = simulatorEnv(port);
  if (tlsFiles) Object.assign(env, { SIM_TLS_CERT: tlsFiles.cert, SIM_TLS_KEY: tlsFiles.key });
  const s = await service(tlsFiles ? 'simulator (TLS)' : 'simulator', ['--import', 'tsx', SIM_ENTRY], env, options);
  const url = `${tlsFiles ? 'https' : 'http'}://127.0.0.1:${port}`;
  await waitFor('simulator admin API', async () => (await http('GET', `${url}/__sim/faults`)).status === 200, START_TIMEOUT_MS, watching(s));
  return { url, port, service: s };
}

async function authenticateAll(sim: Sim, players: readonly WalletIdentity[]): Promise<void> {
  for (const player of players) {
    const body = authenticateBody(player);
    const res = await http('POST', `${sim.url}/api/wallet/authenticate`, body, walletHeaders(body));
    if (res.status !== 200) throw new Error(`authenticate at the simulator: HTTP ${res.status} ${res.text}`);
  }
}

const clearSimCalls = (sim: Sim): Promise<unknown> => http('DELETE', `${sim.url}/__sim/calls`);

// --- cases --------------------------------------------------------------------------------

const cases: Record<string, CaseResult> = {};
/** Every 2xx bet and win the gateway answered, warm-ups included (records created). */
let gatewayRecords = 0;
let gatewayRequests = 0;

function summary(r: LoadResult): string {
  return `${r.rps} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms, max ${r.max} ms, ${r.errors} errors (${JSON.stringify(r.statuses)})`;
}

type Spec = Omit<LoadSpec, 'durationSec'> & { durationSec?: number };

/** The processes whose CPU a case times: the server under test, the wallet simulator and the Redis behind it. */
interface Timed {
  server: Child;
  wallet?: Child;
  /** The redis-server the server uses, when not the bench's own. */
  redisPid?: number;
}

/** The CPU and system calls of a case's processes over its measured load. */
interface Usage {
  serverCpu: number;
  /** Of serverCpu, the part spent in the kernel (system calls, the loopback TCP stack). */
  serverSystemCpu: number;
  walletCpu: number | null;
  /** The bench's Redis and the bench process itself (the load generator): the rest of the box. */
  redisCpu: number;
  loadCpu: number;
  serverIo: IoCounters | null;
  walletIo: IoCounters | null;
}

const NO_IO: IoCounters = { reads: 0, writes: 0, bytesRead: 0, bytesWritten: 0 };

/** a + sign × b, counter by counter. */
function addIo(a: IoCounters, b: IoCounters, sign: 1 | -1 = 1): IoCounters {
  return {
    reads: a.reads + sign * b.reads,
    writes: a.writes + sign * b.writes,
    bytesRead: a.bytesRead + sign * b.bytesRead,
    bytesWritten: a.bytesWritten + sign * b.bytesWritten,
  };
}

/** The bench's own Redis, whose CPU every case counts as part of the box (set once it runs). */
let benchRedisPid: number | undefined;

const processCpuMicros = (): number => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

/** The redis-server whose CPU counts for a case's server. */
const redisOf = (timed: Timed): number | undefined => timed.redisPid ?? benchRedisPid;

/** Runs `spec` for `durationSec`, adding the CPU and system calls of `timed` during it to `usage`. */
async function timedLoad(timed: Timed, spec: Spec, durationSec: number, usage: Usage): Promise<LoadResult> {
  const redisPid = redisOf(timed);
  const serverBefore = cpuTime(timed.server.pid);
  const walletBefore = timed.wallet ? cpuMicros(timed.wallet.pid) : 0;
  const redisBefore = redisPid === undefined ? 0 : cpuMicros(redisPid);
  const loadBefore = processCpuMicros();
  const serverIoBefore = ioCounters(timed.server.pid);
  const walletIoBefore = timed.wallet ? ioCounters(timed.wallet.pid) : undefined;
  const result = await runLoad({ ...spec, durationSec });
  usage.loadCpu += processCpuMicros() - loadBefore;
  if (redisPid !== undefined) usage.redisCpu += cpuMicros(redisPid) - redisBefore;
  const serverAfter = cpuTime(timed.server.pid);
  usage.serverCpu += serverAfter.user + serverAfter.system - serverBefore.user - serverBefore.system;
  usage.serverSystemCpu += serverAfter.system - serverBefore.system;
  if (timed.wallet) usage.walletCpu = (usage.walletCpu ?? 0) + cpuMicros(timed.wallet.pid) - walletBefore;
  if (timed.server.pid !== undefined) usage.serverIo = addIo(usage.serverIo ?? NO_IO, addIo(ioCounters(timed.server.pid), serverIoBefore, -1));
  if (walletIoBefore !== undefined && timed.wallet?.pid !== undefined) usage.walletIo = addIo(usage.walletIo ?? NO_IO, addIo(ioCounters(timed.wallet.pid), walletIoBefore, -1));
  return result;
}

/**
 * Enters a measured case into the report: its load, the server's and the wallet's CPU and system
 * calls per request, and the figures of each slice when it ran in alternating slices.
 */
function recordCase(name: string, timed: Timed, result: LoadResult, warmups: readonly LoadResult[], usage: Usage, slices?: SliceResult[]): void {
  const io = (counters: IoCounters | null): CaseIo | null => {
    if (counters === null || result.requests === 0) return null;
    return {
      readsPerRequest: Math.round((counters.reads / result.requests) * 100) / 100,
      writesPerRequest: Math.round((counters.writes / result.requests) * 100) / 100,
      bytesPerWrite: counters.writes === 0 ? 0 : Math.round(counters.bytesWritten / counters.writes),
    };
  };
  if (name.startsWith('gateway.')) {
    for (const r of [...warmups, result]) {
      gatewayRequests += r.requests;
      if (/\.(bet|win)/.test(name)) gatewayRecords += Object.entries(r.statuses).reduce((n, [s, c]) => (s.startsWith('2') ? n + c : n), 0);
    }
  }
  const perRequest = (us: number | null): number | null => (us === null || result.requests === 0 ? null : Math.round(us / result.requests));
  const serverCpuUsPerRequest = perRequest(usage.serverCpu);
  const walletCpuUsPerRequest = perRequest(usage.walletCpu);
  const box = {
    serverSystem: perRequest(usage.serverSystemCpu),
    redis: redisOf(timed) === undefined ? null : perRequest(usage.redisCpu),
    loadGenerator: perRequest(usage.loadCpu),
  };
  cases[name] = {
    ...result,
    serverCpuUsPerRequest,
    walletCpuUsPerRequest,
    boxCpuUsPerRequest: box,
    serverIo: io(usage.serverIo),
    walletIo: io(usage.walletIo),
    ...(slices === undefined ? {} : { slices }),
  };
  log(`${name}: ${summary(result)}, ${serverCpuUsPerRequest ?? '?'} µs CPU/req (${timed.server.name}), wallet ${walletCpuUsPerRequest ?? '-'}`);
}

const noUsage = (): Usage => ({ serverCpu: 0, serverSystemCpu: 0, walletCpu: null, redisCpu: 0, loadCpu: 0, serverIo: null, walletIo: null });

/** A warm-up at the same load (unmeasured), then the measured run, timing the CPU of `timed` during it. */
async function measure(name: string, options: BenchOptions, timed: Timed, spec: Spec, warmSpec: Spec = spec): Promise<LoadResult> {
  const warm = await runLoad({ ...warmSpec, durationSec: options.warmup });
  const usage = noUsage();
  const result = await timedLoad(timed, spec, spec.durationSec ?? options.duration, usage);
  recordCase(name, timed, result, [warm], usage);
  return result;
}

/** One of the cases measureAlternating() runs side by side. */
interface AlternatingCase {
  readonly name: string;
  readonly timed: Timed;
  /** Each slice's load (a win's `amount` is its share of the bets per slice). */
  readonly spec: Spec;
  /** The warm-up's load, where it is not the slices' (a win's share of the bets differs). */
  readonly warmSpec?: Spec;
  /** The wallet's port: its peak of established connections over the case's slices. */
  readonly walletPort: number;
}

/**
 * Cases that are compared with each other, measured in `slices` alternating slices of `sliceSec`
 * (A B, B A, A B, …) after a warm-up each, so that the box's drift over the run falls on each alike
 * instead of deciding their ratio. Each case's latencies, CPU and system calls are summed over its
 * slices, and each slice's own figures kept (the spread of a ratio between the cases). Resolves to
 * each case's peak of connections at its wallet.
 */
async function measureAlternating(options: BenchOptions, slices: number, sliceSec: number, compared: readonly AlternatingCase[]): Promise<number[]> {
  const warmups: LoadResult[] = [];
  for (const c of compared) warmups.push(await runLoad({ ...(c.warmSpec ?? c.spec), durationSec: options.warmup }));
  const tallies = compared.map((c) => new LoadTally(c.spec.connections));
  const usages = compared.map(noUsage);
  const sliceResults = compared.map((): SliceResult[] => []);
  const peaks = compared.map(() => 0);
  for (let slice = 0; slice < slices; slice += 1) {
    const order = slice % 2 === 0 ? compared.map((_, i) => i) : compared.map((_, i) => compared.length - 1 - i);
    for (const i of order) {
      const c = compared[i]!;
      const usage = usages[i]!;
      const before = { server: usage.serverCpu, redis: usage.redisCpu };
      const [result, peak] = await peakConnections(c.walletPort, timedLoad(c.timed, { ...c.spec, tally: tallies[i] }, sliceSec, usage));
      peaks[i] = Math.max(peaks[i]!, peak);
      const perRequest = (us: number): number | null => (result.requests === 0 ? null : Math.round(us / result.requests));
      sliceResults[i]!.push({
        requests: result.requests,
        rps: result.rps,
        serverCpuUsPerRequest: perRequest(usage.serverCpu - before.server),
        redisCpuUsPerRequest: redisOf(c.timed) === undefined ? null : perRequest(usage.redisCpu - before.redis),
      });
    }
  }
  compared.forEach((c, i) => recordCase(c.name, c.timed, tallies[i]!.result(), [warmups[i]!], usages[i]!, sliceResults[i]!));
  return peaks;
}

/** Splits the bets (debits) placed so far between a warm-up and the measured win (credit) load, in the ratio of their seconds. */
function consumeSplit(available: number, warmSec: number, measuredSec: number): [number, number] {
  const warm = Math.floor((available * warmSec) / (warmSec + measuredSec));
  return [warm, available - warm];
}

async function directCases(sim: Sim, options: BenchOptions): Promise<void> {
  const players = identities(options.connections, 'direct');
  await authenticateAll(sim, players);
  const ids = new Ids();
  const debits = new PlacedQueue();
  const spec = (op: DirectOp, connections = options.connections): LoadSpec => ({
    url: sim.url,
    connections,
    durationSec: options.duration,
    request: directRequests(op, ids, players, debits),
  });
  await measure('direct.balance', options, { server: sim.service }, spec('balance'));
  await clearSimCalls(sim);
  await measure('direct.debit', options, { server: sim.service }, spec('debit'));
  await clearSimCalls(sim);
  const [warm, measured] = consumeSplit(debits.size, options.warmup, options.duration);
  await measure('direct.credit', options, { server: sim.service }, { ...spec('credit'), amount: measured }, { ...spec('credit'), amount: warm });
  await clearSimCalls(sim);
  await measure(`direct.debit@${options.lowConnections}`, options, { server: sim.service }, { ...spec('debit', options.lowConnections), durationSec: options.duration / 2 });
  await clearSimCalls(sim);
}

// --- reference server ---------------------------------------------------------------------

function engineEnv(port: number, sim: Sim, redisUrl: string, prefix: string, options: BenchOptions): Record<string, string> {
  return {
    ...serverEnv({ port, redisUrl, prefix, walletUrl: sim.url, processes: options.processes }),
    WALLET_TLS_INSECURE: String(sim.url.startsWith('https:')),
    RETRY_DELAY_UNIT: 'ms',
    LOG_LEVEL: options.logLevel,
    NODE_ENV: 'production',
    ...(otlpSinkUrl === undefined ? {} : { OTEL_EXPORTER_OTLP_ENDPOINT: otlpSinkUrl, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf', OTEL_TRACES_SAMPLER: 'always_on' }),
  };
}

/** With --tracing: the OTLP sink every gateway and worker of the run exports to (bench/otlp-sink.ts). */
let otlpSinkUrl: string | undefined;

async function startOtlpSink(options: BenchOptions): Promise<string> {
  const port = await freePort();
  const s = await service('otlp sink', ['--import', 'tsx', 'bench/otlp-sink.ts'], { OTLP_SINK_PORT: String(port) }, options);
  const url = `http://127.0.0.1:${port}`;
  await waitFor('otlp sink', async () => (await http('GET', `${url}/stats`)).status === 200, START_TIMEOUT_MS, watching(s));
  return url;
}

interface Reference {
  url: string;
  sessions: string[];
  service: Child;
}

/** The reference server with one session per load connection, written straight into Redis. */
async function startReference(sim: Sim, redisUrl: string, options: BenchOptions, name: string, nodeArgs: string[] = [], extraEnv: Record<string, string> = {}): Promise<Reference> {
  const port = await freePort();
  const prefix = 'wgwbench-ref';
  const players = identities(options.connections, name);
  await authenticateAll(sim, players);
  const redis = new Redis(redisUrl);
  const sessions = players.map((_, i) => `ref-session-${i}`);
  try {
    await Promise.all(players.map((p, i) => redis.set(`${prefix}:refsession:${sessions[i] as string}`, JSON.stringify(p))));
  } finally {
    redis.disconnect();
  }
  const server = await service('reference server', [...nodeArgs, '--import', 'tsx', 'bench/reference-server.ts'], { ...engineEnv(port, sim, redisUrl, prefix, options), ...extraEnv }, options);
  const url = `http://127.0.0.1:${port}`;
  await waitFor('reference server', async () => (await http('GET', `${url}/healthz`)).status === 200, START_TIMEOUT_MS, watching(server));
  return { url, sessions, service: server };
}

// --- gateway ------------------------------------------------------------------------------

interface Gateway {
  url: string;
  prefix: string;
  service: Child;
}

async function startGateway(
  sim: Sim,
  redisUrl: string,
  options: BenchOptions,
  label: string,
  nodeArgs: string[] = [],
  extraEnv: Record<string, string> = {},
): Promise<Gateway> {
  const port = await freePort();
  const prefix = `wgwbench-${label}`;
  const s = await service(`gateway (${label})`, [...nodeArgs, GATEWAY_ENTRY], { ...engineEnv(port, sim, redisUrl, prefix, options), ...extraEnv }, options);
  const url = `http://127.0.0.1:${port}`;
  // /healthz, not /readyz: the operators' routes are optional in the app; a first launch proves the rest.
  await waitFor('gateway /healthz', async () => (await http('GET', `${url}/healthz`)).status === 200, START_TIMEOUT_MS, watching(s));
  return { url, prefix, service: s };
}

function startWorker(sim: Sim, redisUrl: string, gateway: Gateway, options: BenchOptions, extraEnv: Record<string, string> = {}): Promise<Child> {
  return service('worker', [WORKER_ENTRY], { ...engineEnv(0, sim, redisUrl, gateway.prefix, options), ...extraEnv }, options);
}

/** GET /launch with Accept: application/json, one session per load connection. */
async function launchSessions(gateway: Gateway, count: number, label: string): Promise<string[]> {
  const out: string[] = [];
  for (const p of identities(count, label)) {
    const query = new URLSearchParams({ token: p.token, player_id: p.player_id, site_id: p.site_id, currency: p.currency, game_id: p.game_id });
    const res = await http('GET', `${gateway.url}/launch?${query.toString()}`, undefined, { accept: 'application/json' });
    if (res.status !== 200) throw new Error(`launch: HTTP ${res.status} ${res.text.slice(0, 300)}`);
    out.push((JSON.parse(res.text) as { session_id: string }).session_id);
  }
  return out;
}

/** Without a duration: measure() gives it the run's, the other callers their own. */
function engineSpec(gateway: Gateway, op: EngineOp, ids: Ids, sessions: string[], bets: PlacedQueue, connections: number): Spec {
  return { url: gateway.url, connections, request: engineRequests(op, ids, sessions, bets) };
}

async function usedMemory(redisUrl: string): Promise<number> {
  const redis = new Redis(redisUrl);
  try {
    const info = await redis.info('memory');
    return Number(/^used_memory:(\d+)/m.exec(info)?.[1] ?? NaN);
  } finally {
    redis.disconnect();
  }
}

async function sampledTxKeyBytes(redisUrl: string, prefix: string, ids: string[]): Promise<number | null> {
  const redis = new Redis(redisUrl);
  try {
    const keys = keysFor(prefix);
    const sizes = await Promise.all(ids.map((id) => redis.memory('USAGE', keys.transaction(id)) as Promise<number | null>));
    const known = sizes.filter((n): n is number => typeof n === 'number');
    return known.length === 0 ? null : Math.round(known.reduce((a, b) => a + b, 0) / known.length);
  } finally {
    redis.disconnect();
  }
}

/**
 * Redis memory of the prefix's keys by kind (the segment after the prefix: tx, round, tx-time…),
 * `MEMORY USAGE` summed over every key: where a record's bytes go.
 */
async function keyBytesByKind(redisUrl: string, prefix: string): Promise<Record<string, { keys: number; bytes: number }>> {
  const redis = new Redis(redisUrl);
  try {
    const out: Record<string, { keys: number; bytes: number }> = {};
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      const sizes = await Promise.all(keys.map((k) => redis.memory('USAGE', k, 'SAMPLES', 0) as Promise<number | null>));
      keys.forEach((key, i) => {
        const kind = key.slice(prefix.length + 1).split(':')[0] ?? '';
        const entry = (out[kind] ??= { keys: 0, bytes: 0 });
        entry.keys += 1;
        entry.bytes += sizes[i] ?? 0;
      });
    } while (cursor !== '0');
    return out;
  } finally {
    redis.disconnect();
  }
}

// --- the reference server and the gateway, side by side -------------------------------------

/** Balance, bet and win each run in this many alternating slices of the reference and the gateway, … */
const SERVED_SLICES = 6;
/** … each slice this share of --duration: each side is measured for twice --duration per operation. */
const SERVED_SLICE_SHARE = 1 / 3;

/** A server under test in the alternating cases, with the simulator and the Redis behind it. */
interface Served {
  /** The case names' first part: `reference` or `gateway`. */
  readonly label: string;
  readonly url: string;
  readonly sessions: string[];
  readonly timed: Timed;
  readonly sim: Sim;
  readonly ids: Ids;
  /** The bets of its bet case, one win each in its win case. */
  readonly bets: PlacedQueue;
}

/** The reference server with a simulator and a Redis of its own, as the gateway has (see servedCases). */
async function startReferenceSide(options: BenchOptions): Promise<{ side: Served; stop: () => Promise<void> }> {
  const redis = await RedisServer.start();
  onCleanup(() => redis.stop());
  const sim = await startSim(options);
  const ref = await startReference(sim, redis.url, options, 'reference');
  const side = { label: 'reference', url: ref.url, sessions: ref.sessions, timed: { server: ref.service, wallet: sim.service, redisPid: redis.pid }, sim, ids: new Ids(), bets: new PlacedQueue() };
  const stop = async (): Promise<void> => {
    await ref.service.stop();
    await sim.service.stop();
    await redis.stop();
  };
  return { side, stop };
}

/**
 * A directory in memory (/dev/shm) where the box has one, else under `fallback`, removed at the end.
 * The stall monitor writes there from the gateway's main thread once a second: on a disk, its
 * rename over the last file waited for the data to reach the disk (ext4 flushes a file renamed over
 * another), which blocked the measured loop for up to half a second and made the very stalls the
 * monitor is there to explain.
 */
function memoryBackedDir(fallback: string, prefix: string): string {
  const dir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : fallback, prefix));
  onCleanup(async () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

interface GatewayRun {
  gateway: Gateway;
  sessions: string[];
  worker: Child | undefined;
  side: Served;
  /** Every GC pause and stalled event loop of the gateway's processes, for the fixed-rate case's slow requests. */
  stallDir: string;
}

/** The gateway (its processes watched by the stall monitor) and its worker, on the bench's simulator and Redis. */
async function startGatewaySide(sim: Sim, redisUrl: string, options: BenchOptions, report: BenchReport, withWorker: boolean, tmp: string): Promise<GatewayRun> {
  const stallDir = memoryBackedDir(tmp, 'wgw-bench-stalls-');
  const gateway = await startGateway(sim, redisUrl, options, 'h1', ['--require', STALL_MONITOR], { BENCH_STALL_DIR: stallDir });
  const worker = withWorker ? await startWorker(sim, redisUrl, gateway, options) : undefined;
  report.memory.gatewayRssBeforeMiB = rssMiB(gateway.service.pid);
  const sessions = await launchSessions(gateway, options.connections, 'gw');
  const side = { label: 'gateway', url: gateway.url, sessions, timed: { server: gateway.service, wallet: sim.service }, sim, ids: new Ids(), bets: new PlacedQueue() };
  return { gateway, sessions, worker, side, stallDir };
}

/**
 * Balance, bet and win through every side at once running (the reference server and the gateway,
 * or the one of them `--only` kept), in alternating slices: the box's drift over the run falls on
 * both alike, and the ratios of one slice pair show how far the noise goes. A win consumes its
 * side's bets, a share per slice: a slice ends when its share is used or its time is over.
 */
async function alternatingCases(sides: readonly Served[], options: BenchOptions, report: BenchReport): Promise<void> {
  const sliceSec = options.duration * SERVED_SLICE_SHARE;
  const load = (s: Served, op: EngineOp): Spec => ({ url: s.url, connections: options.connections, request: engineRequests(op, s.ids, s.sessions, s.bets) });
  const alternate = (op: EngineOp, spec: (s: Served, i: number) => Spec, warmSpec?: (s: Served, i: number) => Spec): Promise<number[]> =>
    measureAlternating(
      options,
      SERVED_SLICES,
      sliceSec,
      sides.map((s, i) => ({ name: `${s.label}.${op}`, timed: s.timed, spec: spec(s, i), warmSpec: warmSpec?.(s, i), walletPort: s.sim.port })),
    );
  const clearCalls = (): Promise<unknown> => Promise.all(sides.map((s) => clearSimCalls(s.sim)));

  await alternate('balance', (s) => load(s, 'balance'));
  await clearCalls();
  const peaks = await alternate('bet', (s) => load(s, 'bet'));
  const gatewayAt = sides.findIndex((s) => s.label === 'gateway');
  if (gatewayAt >= 0) report.walletConnections.http1 = peaks[gatewayAt];
  await clearCalls();
  const shares = sides.map((s) => consumeSplit(s.bets.size, options.warmup, SERVED_SLICES * sliceSec));
  await alternate(
    'win',
    (s, i) => ({ ...load(s, 'win'), amount: Math.max(1, Math.floor(shares[i]![1] / SERVED_SLICES)) }),
    (s, i) => ({ ...load(s, 'win'), amount: Math.max(1, shares[i]![0]) }),
  );
  await clearCalls();
}

/**
 * Cases b and c. The reference server and the gateway both run, each with a simulator and a Redis
 * of its own, so that each side's Redis CPU and wallet connections are its alone (the gateway's
 * worker and timers keep using its Redis while the reference's slices run); balance, bet and win
 * alternate between them (alternatingCases). Then the reference's fixed-rate case, and the
 * reference goes; then what the gateway measures alone: Redis bytes per record, the
 * low-concurrency and the fixed-rate bets, its RSS.
 */
async function servedCases(
  sim: Sim,
  redisUrl: string,
  options: BenchOptions,
  report: BenchReport,
  tmp: string,
  parts: { reference: boolean; gateway: boolean; worker: boolean },
): Promise<GatewayRun | undefined> {
  const reference = parts.reference ? await startReferenceSide(options) : undefined;
  const run = parts.gateway ? await startGatewaySide(sim, redisUrl, options, report, parts.worker, tmp) : undefined;
  const memoryBefore = run === undefined ? 0 : await usedMemory(redisUrl);
  await alternatingCases([reference?.side, run?.side].filter((s): s is Served => s !== undefined), options, report);
  if (run !== undefined) {
    const sample = run.side.bets.sample(20);
    const memoryAfter = await usedMemory(redisUrl);
    report.memory.redisBytesPerRecord = {
      usedMemoryDelta: memoryAfter - memoryBefore,
      records: gatewayRecords,
      perRecord: gatewayRecords === 0 ? 0 : Math.round((memoryAfter - memoryBefore) / gatewayRecords),
      sampledTxKeyBytes: await sampledTxKeyBytes(redisUrl, run.gateway.prefix, sample.map((b) => b.transactionId)),
      byKind: await keyBytesByKind(redisUrl, run.gateway.prefix),
    };
  }
  if (reference !== undefined) {
    const { side } = reference;
    const saturated = cases['reference.bet'];
    if (saturated !== undefined && saturated.errors === 0 && saturated.rps > 0) {
      // The latency yardstick: a quarter of what the reference carried, as a steady arrival rate.
      report.fixedRate = { share: FIXED_RATE_SHARE, rps: Math.max(1, Math.round(saturated.rps * FIXED_RATE_SHARE)) };
      await measure(`reference.bet${FIXED_RATE_SUFFIX}`, options, side.timed, {
        url: side.url,
        connections: options.connections,
        rate: report.fixedRate.rps,
        request: engineRequests('bet', new Ids(), side.sessions, new PlacedQueue()),
      });
    }
    await reference.stop();
  }
  if (run !== undefined) await gatewayAloneCases(run, sim, redisUrl, options, report);
  return run;
}

/** The gateway's cases without a reference beside them: bets at few connections, the fixed-rate bets and their stalls, its RSS. */
async function gatewayAloneCases(run: GatewayRun, sim: Sim, redisUrl: string, options: BenchOptions, report: BenchReport): Promise<void> {
  const { gateway, sessions, side } = run;
  await measure(`gateway.bet@${options.lowConnections}`, options, side.timed, { ...engineSpec(gateway, 'bet', side.ids, sessions, side.bets, options.lowConnections), durationSec: options.duration / 2 });
  await clearSimCalls(sim);
  if (report.fixedRate !== undefined) {
    const paced = { ...engineSpec(gateway, 'bet', side.ids, sessions, new PlacedQueue(), options.connections), rate: report.fixedRate.rps };
    const redis = new Redis(redisUrl);
    const ours = (): number[] => [...services.filter((c) => c.isRunning()).map((c) => c.pid), ...(benchRedisPid === undefined ? [] : [benchRedisPid])];
    const box = new BoxWatch(ours, benchRedisPid, sim.service.pid);
    try {
      await watchRedis(redis, STALL_REDIS_MS);
      box.start();
      const from = Date.now();
      const result = await measure(`gateway.bet${FIXED_RATE_SUFFIX}`, options, side.timed, paced);
      const during = { from, to: Date.now() };
      box.stop();
      // The monitor publishes once a second: wait for its files to cover the case.
      await new Promise((r) => setTimeout(r, 1200));
      report.stalls = explainStalls(during, result.slow ?? [], readStallMonitor(run.stallDir), await readRedisEvents(redis), box.windows, SLOW_MS);
      const causes = Object.entries(report.stalls.byCause).map(([cause, n]) => `${n} ${cause}`).join(', ');
      log(`fixed rate: max ${result.max} ms, ${result.slow?.length ?? 0} over ${SLOW_MS} ms${causes === '' ? '' : ` (${causes})`}`);
    } finally {
      box.stop();
      redis.disconnect();
    }
    await clearSimCalls(sim);
  } else {
    report.skipped.push('fixed-rate latency case: needs the reference case of the same run (its rate is a quarter of the reference\'s req/s)');
  }
  report.memory.gatewayRssAfterMiB = rssMiB(gateway.service.pid);
  report.memory.gatewayRequestsServed = gatewayRequests;
}

/**
 * --endurance N: one more gateway, N requests in ten slices, each slice bets and then one win per
 * bet (a long run of the two money calls), RSS of every process sampled after each slice.
 */
async function enduranceCase(sim: Sim, redisUrl: string, options: BenchOptions, report: BenchReport): Promise<void> {
  const gateway = await startGateway(sim, redisUrl, options, 'endurance');
  const sessions = await launchSessions(gateway, options.connections, 'endurance');
  const ids = new Ids();
  const slice = Math.max(2, Math.ceil(options.endurance / 10));
  const samples: { requests: number; rssMiB: { pid: number; mib: number }[] }[] = [{ requests: 0, rssMiB: rssMiB(gateway.service.pid) }];
  const began = Date.now();
  let requests = 0;
  let errors = 0;
  while (requests < options.endurance) {
    const bets = new PlacedQueue();
    const wanted = Math.min(slice, options.endurance - requests);
    const placed = await runLoad({ ...engineSpec(gateway, 'bet', ids, sessions, bets, options.connections), amount: Math.ceil(wanted / 2), durationSec: 3600 });
    const won = await runLoad({ ...engineSpec(gateway, 'win', ids, sessions, bets, options.connections), amount: bets.size, durationSec: 3600 });
    requests += placed.requests + won.requests;
    errors += placed.errors + won.errors;
    samples.push({ requests, rssMiB: rssMiB(gateway.service.pid) });
    log(`endurance: ${requests} requests, ${errors} errors, RSS ${samples[samples.length - 1]?.rssMiB.map((p) => p.mib).join(' + ')} MiB`);
    await clearSimCalls(sim);
  }
  report.memory.endurance = { requests, seconds: Math.round((Date.now() - began) / 1000), errors, samples };
  await gateway.service.stop();
}

// --- worker -------------------------------------------------------------------------------

interface SimCall {
  transactionId?: string;
  at: number;
  code?: number;
  fault?: string;
  applied: boolean;
}

/**
 * Retry throughput: with the worker stopped, N wins meet a credit fault armed for their first
 * attempt (code 32, a plain retry code that is no outage evidence) and are answered 202 pending; once every retry is due
 * (RETRY_DELAY_UNIT=ms: 301 ms), `processes` fresh workers start and drain the backlog. The
 * simulator's call log times the retries.
 */
async function workerCase(sim: Sim, redisUrl: string, gateway: Gateway, sessions: string[], options: BenchOptions, processes: number): Promise<WorkerResult> {
  const jobs = options.retryJobs;
  const ids = new Ids();
  const bets = new PlacedQueue();
  const bet = await runLoad({ ...engineSpec(gateway, 'bet', ids, sessions, bets, options.connections), amount: jobs, durationSec: 60 });
  log(`worker case: ${bets.size} bets placed (${summary(bet)})`);
  // Not code 2: it is outage evidence, and thousands of them open the wallet circuit breaker, whose
  // recovery the worker then waits for (the case would time that, not the worker).
  const armed = await http('POST', `${sim.url}/__sim/faults`, JSON.stringify({ type: 'failNext', op: 'credit', count: bets.size, code: Code.UserOffline }), {
    'content-type': 'application/json',
  });
  if (armed.status !== 200) throw new Error(`arming the credit fault: HTTP ${armed.status} ${armed.text}`);
  await clearSimCalls(sim);
  const wins = await runLoad({ ...engineSpec(gateway, 'win', ids, sessions, bets, options.connections), amount: bets.size, durationSec: 60 });
  log(`worker case: wins sent (${summary(wins)})`);
  const queued = wins.statuses['202'] ?? 0;
  // Every retry due before the worker starts: the worker, not the delay table, sets the pace.
  await new Promise((r) => setTimeout(r, 500));

  const redis = new Redis(redisUrl);
  const pendingKey = keysFor(gateway.prefix).pendingIndex();
  const started = Date.now();
  // Without the retry limiter (WALLET_RETRY_RATE, default 500 jobs/s over all workers, the drain
  // rate after an outage): the case measures what one worker can do, not the configured cap.
  const fresh = await Promise.all(Array.from({ length: processes }, () => startWorker(sim, redisUrl, gateway, options, { WALLET_RETRY_RATE: '0' })));
  const workersCpu = (): number => fresh.reduce((n, w) => n + cpuMicros(w.pid), 0);
  let stillPending = 0;
  // The workers' CPU from the first finished retry on (their start left out) to the drained backlog.
  let firstDrop: { cpu: number; pending: number } | undefined;
  try {
    await waitFor(
      'retry backlog drained',
      async () => {
        stillPending = await redis.zcard(pendingKey);
        if (firstDrop === undefined && stillPending < queued) firstDrop = { cpu: workersCpu(), pending: stillPending };
        return stillPending === 0;
      },
      60_000,
      watching(fresh[0]!),
    ).catch((err: unknown) => log(`worker case: ${(err as Error).message.split('\n')[0] as string}`));
  } finally {
    redis.disconnect();
  }
  const workerCpu = firstDrop === undefined ? null : workersCpu() - firstDrop.cpu;
  const retriedMeanwhile = firstDrop === undefined ? 0 : firstDrop.pending - stillPending;
  await Promise.all(fresh.map((w) => w.stop()));
  const calls = (JSON.parse((await http('GET', `${sim.url}/__sim/calls?op=credit`)).text) as { calls: SimCall[] }).calls;
  await clearSimCalls(sim);
  const seen = new Set<string>();
  const retries = calls.filter((c) => {
    const id = c.transactionId ?? '';
    if (seen.has(id)) return true;
    seen.add(id);
    return false;
  });
  const first = retries[0]?.at ?? 0;
  const last = retries[retries.length - 1]?.at ?? 0;
  const span = (last - first) / 1000;
  return {
    processes,
    jobs,
    queued,
    retries: retries.length,
    retriesSucceeded: retries.filter((c) => c.applied).length,
    jobsPerSecond: span > 0 ? Math.round((retries.length - 1) / span) : 0,
    endToEndSeconds: Math.round((last - started) / 10) / 100,
    stillPending,
    workerCpuUsPerRetry: workerCpu === null || retriedMeanwhile <= 0 ? null : Math.round(workerCpu / retriedMeanwhile),
    retryDelayUnit: 'ms',
  };
}

// --- the ledger: bets with it off and on ------------------------------------------------------

const ADMIN_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
/** The bench's throwaway databases: `wgw_bench_<pid>_<ms since 1970>`. */
const BENCH_DATABASE = /^wgw_bench_\d+_(\d+)$/;
/** A throwaway database this old was left by a bench that never got to drop it (killed hard). */
const LEFTOVER_DATABASE_AGE_MS = 60 * 60 * 1000;
/** Alternating slices of the ledger's A/B (see ledgerCase), and its fixed rate: this share of the saturated rate without a ledger. */
const LEDGER_SLICES = 6;
const LEDGER_RATE_SHARE = 0.5;

/**
 * The ledger's PostgreSQL: a throwaway database on the machine's server at 127.0.0.1:5432 (dropped
 * at the end), or, when none answers there, an embedded PGlite as `npm run dev` runs it.
 */
async function ledgerDatabase(tmp: string): Promise<{ url: string; where: string }> {
  const admin = new pg.Client({ connectionString: ADMIN_DATABASE_URL, connectionTimeoutMillis: 2000 });
  try {
    await admin.connect();
  } catch {
    const embedded = await spawnEmbeddedPostgres(join(tmp, 'pglite'));
    onCleanup(() => embedded.close());
    return { url: embedded.url, where: 'embedded PostgreSQL (PGlite)' };
  }
  const name = `wgw_bench_${process.pid}_${Date.now()}`;
  // Registered first: a signal while the database is made still drops it.
  onCleanup(async () => {
    const c = new pg.Client({ connectionString: ADMIN_DATABASE_URL, connectionTimeoutMillis: 5000 });
    await c.connect();
    try {
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    } finally {
      await c.end();
    }
  });
  try {
    await dropLeftoverDatabases(admin);
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  return { url: ADMIN_DATABASE_URL.replace(/\/postgres$/, `/${name}`), where: 'PostgreSQL at 127.0.0.1:5432 (a throwaway database)' };
}

/**
 * Drops the bench's throwaway databases made over an hour ago (by their name's time): what a bench
 * killed without its cleanup (SIGKILL, the machine stopped) left. Nothing but that name is touched,
 * and without FORCE: a database that still has a connection is in use, not left over.
 */
async function dropLeftoverDatabases(admin: pg.Client): Promise<void> {
  const { rows } = await admin.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE 'wgw\\_bench\\_%'");
  for (const { datname } of rows) {
    const made = Number(BENCH_DATABASE.exec(datname)?.[1]);
    if (!Number.isFinite(made) || Date.now() - made < LEFTOVER_DATABASE_AGE_MS) continue;
    await admin.query(`DROP DATABASE IF EXISTS ${datname}`).then(
      () => log(`dropped ${datname}, left by an earlier bench`),
      (err: unknown) => log(`kept ${datname}, left by an earlier bench: ${(err as Error).message}`),
    );
  }
}

/**
 * `--ledger`: the bet case through two gateways, each with its worker, one without a ledger and
 * one with DATABASE_URL (its scripts append every state change to the outbox, its worker drains
 * it into PostgreSQL), in alternating slices so the box's drift falls on both alike. Each slice
 * of the ledger's side ends when its outbox is drained, so the drain's Redis and worker CPU are
 * counted with the bets that caused it.
 */
async function ledgerCase(sim: Sim, redisUrl: string, options: BenchOptions, report: BenchReport, tmp: string): Promise<void> {
  const database = await ledgerDatabase(tmp);
  const variants = [
    { label: 'ledger-off', env: {} },
    { label: 'ledger-on', env: { DATABASE_URL: database.url } },
  ] as const;
  const sides: LedgerRunSide[] = [];
  const stops: (() => Promise<unknown>)[] = [];
  const redis = new Redis(redisUrl);
  try {
    for (const v of variants) {
      const gateway = await startGateway(sim, redisUrl, options, v.label, [], v.env);
      stops.push(() => gateway.service.stop());
      const worker = await startWorker(sim, redisUrl, gateway, options, v.env);
      stops.push(() => worker.stop());
      const sessions = await launchSessions(gateway, options.connections, v.label);
      const spec = engineSpec(gateway, 'bet', new Ids(), sessions, new PlacedQueue(), options.connections);
      sides.push({ label: v.label, gateway, worker, spec, warm: await runLoad({ ...spec, durationSec: options.warmup }) });
    }
    const outbox = (side: LedgerRunSide): string => keysFor(side.gateway.prefix).ledgerOutbox();
    const drained = async (side: LedgerRunSide): Promise<void> => {
      await waitFor(`${side.label} outbox drained`, async () => (await redis.xlen(outbox(side))) === 0, 60_000, watching(side.worker));
    };
    for (const side of sides) await drained(side);
    let outboxPeak = 0;

    /** Alternating slices of the two sides at `rate` (undefined: saturated), each slice ended by its drained outbox. */
    const alternate = async (suffix: string, rate: number | undefined): Promise<[LedgerSide, LedgerSide]> => {
      const acc = sides.map(() => ({ usage: noUsage(), tally: new LoadTally(options.connections), redisAllCpu: 0, workerCpu: 0 }));
      const sliceSec = options.duration / (LEDGER_SLICES / 2);
      for (let slice = 0; slice < LEDGER_SLICES; slice += 1) {
        const order = slice % 2 === 0 ? [0, 1] : [1, 0];
        for (const i of order) {
          const side = sides[i]!;
          const a = acc[i]!;
          const redisBefore = cpuMicros(benchRedisPid as number);
          const workerBefore = cpuMicros(side.worker.pid);
          await timedLoad({ server: side.gateway.service, wallet: sim.service }, { ...side.spec, rate, tally: a.tally }, sliceSec, a.usage);
          outboxPeak = Math.max(outboxPeak, await redis.xlen(outbox(sides[1]!)));
          await drained(side);
          a.redisAllCpu += cpuMicros(benchRedisPid as number) - redisBefore;
          a.workerCpu += cpuMicros(side.worker.pid) - workerBefore;
        }
      }
      const figures = sides.map((side, i): LedgerSide => {
        const a = acc[i]!;
        const result = a.tally.result();
        recordCase(`gateway.bet.${side.label}${suffix}`, { server: side.gateway.service, wallet: sim.service }, result, suffix === '' ? [side.warm] : [], a.usage);
        const perBet = (us: number): number | null => (result.requests === 0 ? null : Math.round(us / result.requests));
        return {
          bets: result.requests,
          rps: result.rps,
          gatewayCpuUsPerBet: perBet(a.usage.serverCpu),
          redisCpuUsPerBet: perBet(a.usage.redisCpu),
          redisCpuUsPerBetWithDrain: perBet(a.redisAllCpu),
          workerCpuUsPerBet: perBet(a.workerCpu),
        };
      });
      return [figures[0]!, figures[1]!];
    };

    const [off, on] = await alternate('', undefined);
    // The same at one fixed rate on both, half what the side without a ledger just carried: equal
    // req/s, so equal batching per wake-up and per Redis pipeline, and the difference is the code's.
    const rate = Math.max(1, Math.round((off.rps * LEDGER_RATE_SHARE)));
    const [pacedOff, pacedOn] = await alternate(`@${rate}/s`, rate);
    report.ledger = { database: database.where, slices: LEDGER_SLICES, outboxPeakEntries: outboxPeak, off, on, paced: { rps: rate, off: pacedOff, on: pacedOn } };
  } finally {
    redis.disconnect();
    for (const stop of stops.reverse()) await stop();
  }
}

interface LedgerRunSide {
  label: string;
  gateway: Gateway;
  worker: Child;
  spec: Spec;
  warm: LoadResult;
}

// --- TLS: HTTP/1.1 and HTTP/2, and profile ---------------------------------------------------

/** Alternating slices of the HTTP/1.1-over-TLS and HTTP/2 bet cases (see measureAlternating). */
const TLS_SLICES = 6;

/**
 * The bet case against a simulator behind TLS, twice: WALLET_HTTP2=false (HTTP/1.1 over TLS, the
 * WALLET_CONNECTIONS pool) and the default (HTTP/2 negotiated in ALPN), so HTTP/2 is compared with
 * HTTP/1.1 under the same TLS cost. Each gateway has a simulator of its own (the same program and
 * settings), so each side's wallet connections and CPU are its own; the two cases run in
 * alternating slices. Each gateway's launch calls prove the protocol at its simulator.
 */
async function tlsCases(redisUrl: string, options: BenchOptions, report: BenchReport, tmp: string): Promise<void> {
  const { cert, key } = selfSignedCert();
  const files = { cert: join(tmp, 'cert.pem'), key: join(tmp, 'key.pem') };
  writeFileSync(files.cert, cert);
  writeFileSync(files.key, key, { mode: 0o600 });
  const variants = [
    { label: 'h1tls', http2: false, version: '1.1', name: 'HTTP/1.1 over TLS' },
    { label: 'h2', http2: true, version: '2.0', name: 'HTTP/2' },
  ] as const;
  const sides: { sim: Sim; gateway: Gateway; sessions: string[] }[] = [];
  const stops: (() => Promise<unknown>)[] = [];
  try {
    for (const v of variants) {
      const sim = await startSim(options, files);
      stops.push(() => sim.service.stop());
      const gateway = await startGateway(sim, redisUrl, options, v.label, [], { WALLET_HTTP2: String(v.http2) });
      stops.push(() => gateway.service.stop());
      const sessions = await launchSessions(gateway, options.connections, v.label);
      const versions = (JSON.parse((await http('GET', `${sim.url}/__sim/calls?op=authenticate`)).text) as { calls: { httpVersion: string }[] }).calls;
      const matching = versions.filter((c) => c.httpVersion === v.version).length;
      if (matching !== versions.length) report.skipped.push(`${v.name} check: only ${matching} of ${versions.length} launch calls reached the simulator over HTTP ${v.version}`);
      await clearSimCalls(sim);
      sides.push({ sim, gateway, sessions });
    }
    const [h1Peak, h2Peak] = await measureAlternating(
      options,
      TLS_SLICES,
      options.duration / TLS_SLICES,
      variants.map((v, i) => {
        const { sim, gateway, sessions } = sides[i]!;
        return {
          name: `gateway.bet.${v.label}`,
          timed: { server: gateway.service, wallet: sim.service },
          spec: engineSpec(gateway, 'bet', new Ids(), sessions, new PlacedQueue(), options.connections),
          walletPort: sim.port,
        };
      }),
    );
    report.walletConnections.http1Tls = h1Peak ?? 0;
    report.walletConnections.http2 = h2Peak ?? 0;
  } finally {
    for (const stop of stops.reverse()) await stop();
  }
}

type SampleKind = 'cpu' | 'alloc';

/**
 * The bet load on a server whose processes load bench/sampler.cjs: a warm-up, then the measured
 * load between two SIGUSR2s, so start-up and warm-up stay out of the profiles. Returns the load's
 * result and the profile files (one per process).
 */
async function sampledBets(server: Child, spec: Spec, dir: string, kind: SampleKind, options: BenchOptions): Promise<[LoadResult, string[]]> {
  await runLoad({ ...spec, durationSec: options.warmup });
  // Only processes that loaded the sampler: SIGUSR2 would end any other.
  const pids = processTree(server.pid).filter((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(SAMPLER));
  const toggle = (): void => pids.forEach((pid) => process.kill(pid, 'SIGUSR2'));
  const written = (extension: string): string[] => readdirSync(dir).filter((f) => f.endsWith(`.${extension}`)).map((f) => join(dir, f));
  const extension = kind === 'cpu' ? 'cpuprofile' : 'heapprofile';
  toggle();
  await waitFor(`every ${server.name} process sampling`, () => written('started').length === pids.length, START_TIMEOUT_MS);
  const result = await runLoad({ ...spec, durationSec: options.duration });
  toggle();
  log(`${kind}-sampled ${server.name} bets: ${summary(result)}`);
  await waitFor(`every ${server.name} process wrote its profile`, () => written(extension).length === pids.length, START_TIMEOUT_MS);
  return [result, written(extension)];
}

const SAMPLER = join(ROOT, 'bench', 'sampler.cjs');

/** Node arguments and environment that make a server's processes load the sampler, writing to `dir`. */
function samplerArgs(dir: string, kind: SampleKind): [string[], Record<string, string>] {
  mkdirSync(dir, { recursive: true });
  return [['--require', SAMPLER], { BENCH_SAMPLE: kind, BENCH_SAMPLE_DIR: dir }];
}

/** The reference server's, then the gateway's profiles over the same measured bet load. */
async function sampleBoth(sim: Sim, redisUrl: string, options: BenchOptions, tmp: string, kind: SampleKind): Promise<{ reference: [LoadResult, string[]]; gateway: [LoadResult, string[]] }> {
  const [refArgs, refEnv] = samplerArgs(join(tmp, `${kind}-reference`), kind);
  const ref = await startReference(sim, redisUrl, options, `${kind}-ref`, refArgs, refEnv);
  let reference: [LoadResult, string[]];
  try {
    const spec = { url: ref.url, connections: options.connections, request: engineRequests('bet', new Ids(), ref.sessions, new PlacedQueue()) };
    reference = await sampledBets(ref.service, spec, refEnv.BENCH_SAMPLE_DIR as string, kind, options);
  } finally {
    await ref.service.stop();
    await clearSimCalls(sim);
  }
  const [gwArgs, gwEnv] = samplerArgs(join(tmp, `${kind}-gateway`), kind);
  const gateway = await startGateway(sim, redisUrl, options, kind, gwArgs, gwEnv);
  try {
    const sessions = await launchSessions(gateway, options.connections, kind);
    const spec = engineSpec(gateway, 'bet', new Ids(), sessions, new PlacedQueue(), options.connections);
    return { reference, gateway: await sampledBets(gateway.service, spec, gwEnv.BENCH_SAMPLE_DIR as string, kind, options) };
  } finally {
    await gateway.service.stop();
    await clearSimCalls(sim);
  }
}

/**
 * Where the CPU of a bet goes, the reference server's and the gateway's, measured load only: the
 * difference of the two by area is what the gateway adds.
 */
async function profileCase(sim: Sim, redisUrl: string, options: BenchOptions, report: BenchReport, tmp: string): Promise<void> {
  const { reference, gateway } = await sampleBoth(sim, redisUrl, options, tmp, 'cpu');
  report.profile = summariseProfiles(gateway[1], ROOT, gateway[0].requests);
  report.referenceProfile = summariseProfiles(reference[1], ROOT, reference[0].requests);
}

/**
 * Bytes allocated per bet, every process together, by the reference server and by the gateway.
 * Unlike req/s and CPU time it does not move with the box's speed, and every allocation is
 * young-generation GC work later.
 */
async function allocationCase(sim: Sim, redisUrl: string, options: BenchOptions, report: BenchReport, tmp: string): Promise<void> {
  const { reference, gateway } = await sampleBoth(sim, redisUrl, options, tmp, 'alloc');
  report.allocation = summariseAllocations(gateway[1], ROOT, gateway[0].requests);
  report.referenceAllocation = summariseAllocations(reference[1], ROOT, reference[0].requests);
}

// --- main ---------------------------------------------------------------------------------

function git(args: string[]): string {
  try {
    return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
}

function build(): string | undefined {
  log('building (tsc -p tsconfig.build.json, the Lua scripts and the ledger\'s migrations copied beside it)');
  const out = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], { cwd: ROOT, encoding: 'utf8' });
  if (out.status !== 0) return `build failed:\n${`${out.stdout}${out.stderr}`.split('\n').slice(0, 10).join('\n')}`;
  // As `npm run build`: the store reads its scripts, the ledger its migrations, from beside the compiled code.
  cpSync(join(ROOT, 'src/store/lua'), join(ROOT, 'dist/src/store/lua'), { recursive: true });
  cpSync(join(ROOT, 'src/ledger/migrations'), join(ROOT, 'dist/src/ledger/migrations'), { recursive: true });
  return undefined;
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  process.chdir(ROOT);
  const began = Date.now();
  const report: BenchReport = {
    date: new Date().toISOString(),
    git: { sha: git(['rev-parse', '--short', 'HEAD']) || 'unknown', dirty: git(['status', '--porcelain']) !== '' },
    machine: { cpus: availableParallelism(), node: process.version, loadAverageAtStart: loadavg() },
    options,
    cases,
    walletConnections: {},
    memory: {},
    skipped: [],
  };
  const tmp = mkdtempSync(join(tmpdir(), 'wgw-bench-'));
  onCleanup(async () => rmSync(tmp, { recursive: true, force: true }));

  const buildError = options.build ? build() : undefined;
  const gatewayBuilt = buildError === undefined && existsSync(join(ROOT, GATEWAY_ENTRY));
  const workerBuilt = buildError === undefined && existsSync(join(ROOT, WORKER_ENTRY));

  const redis = await RedisServer.start();
  onCleanup(() => redis.stop());
  const sim = await startSim(options);
  if (options.tracing) otlpSinkUrl = await startOtlpSink(options);
  benchRedisPid = redis.pid;
  log(`redis ${redis.url}, simulator ${sim.url}`);

  // One failing part is reported and the rest still runs.
  const part = async (name: string, work: () => Promise<void>): Promise<void> => {
    // After a signal the cleanup owns what runs: start nothing more.
    if (interrupted) return;
    try {
      await work();
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      log(`${name} failed: ${message}`);
      report.skipped.push(`${name}: ${message.split('\n').slice(0, 6).join(' | ')}`);
    }
  };

  const runs = (p: Part): boolean => options.only.includes(p);
  if (runs('direct')) await part('direct cases (a)', () => directCases(sim, options));

  if (!gatewayBuilt) report.skipped.push(`gateway cases (c), worker, TLS cases, profile: ${buildError ?? `${GATEWAY_ENTRY} does not exist`}`);
  const served = { reference: runs('reference'), gateway: gatewayBuilt && runs('gateway'), worker: workerBuilt && runs('worker') };
  if (served.reference || served.gateway) {
    await part('reference and gateway cases (b, c) and worker', async () => {
      const run = await servedCases(sim, redis.url, options, report, tmp, served);
      if (run === undefined) return;
      const { gateway, sessions, worker } = run;
      // A cluster primary only hands out connections: the serving processes are its workers.
      const tree = report.memory.gatewayRssAfterMiB?.length ?? 0;
      const processes = tree > 1 ? tree - 1 : tree;
      if (processes !== options.processes) {
        report.skipped.push(`same process count: the gateway ran ${processes} process(es), the reference server ${options.processes} (GATEWAY_PROCESSES)`);
      }
      if (served.worker) {
        await worker?.stop();
        await part('worker case', async () => {
          report.worker = await workerCase(sim, redis.url, gateway, sessions, options, 1);
        });
        // The same backlog through two worker processes at once: how retries scale across workers.
        await part('worker case, two processes', async () => {
          report.workerPair = await workerCase(sim, redis.url, gateway, sessions, options, 2);
        });
      } else if (runs('worker')) {
        report.skipped.push(`worker case: ${WORKER_ENTRY} does not exist`);
      }
      await gateway.service.stop();
    });
  }
  if (gatewayBuilt) {
    if (runs('tls')) await part('TLS cases (HTTP/1.1, HTTP/2)', () => tlsCases(redis.url, options, report, tmp));
    if (options.profile) await part('profile', () => profileCase(sim, redis.url, options, report, tmp));
    if (options.alloc) await part('allocation', () => allocationCase(sim, redis.url, options, report, tmp));
    if (options.ledger && runs('gateway')) await part('ledger A/B', () => ledgerCase(sim, redis.url, options, report, tmp));
    if (options.endurance > 0) await part('endurance', () => enduranceCase(sim, redis.url, options, report));
  }

  if (otlpSinkUrl !== undefined) log(`OTLP sink received: ${(await http('GET', `${otlpSinkUrl}/stats`)).text}`);
  report.derived = derive(report);
  console.log(render(report));
  // A partial run (--only) is for working on one part: its JSON stays out of bench/results.
  const partial = options.only.length < PARTS.length;
  const file = writeReport(report, partial ? tmpdir() : join(ROOT, 'bench', 'results'));
  console.log(`\nwritten: ${file} (${Math.round((Date.now() - began) / 1000)} s)`);
}

let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  // `on`, not `once`: a second signal (a second Ctrl-C, a wrapper relaying one) must not end the
  // process before the cleanup has stopped every child and dropped the throwaway database (with
  // no listener left, tsx's preflight would end it at once).
  process.on(signal, () => {
    if (interrupted) {
      log(`${signal}: still stopping`);
      return;
    }
    interrupted = true;
    log(`${signal}: stopping every child`);
    void cleanupAll().then(() => process.exit(128 + osConstants.signals[signal]));
  });
}

main()
  .catch((err: unknown) => {
    console.error(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exitCode = 1;
  })
  .finally(() => {
    if (!interrupted) void cleanupAll();
  });
