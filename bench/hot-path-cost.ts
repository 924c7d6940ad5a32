import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import Redis from 'ioredis';
import { Agent, request } from 'undici';
import { Child, baseEnv } from '../src/lib/child';
import { freePort } from '../src/lib/free-port';
import { RedisServer } from '../src/lib/redis-server';
import { waitFor } from '../src/lib/wait-for';
import { serverEnv, simulatorEnv } from './env';
import { runLoad } from './load';
import { cpuMicros } from './proc';
import { summariseProfiles } from './profile';
import { Ids, PlacedQueue, authenticateBody, engineRequests, identities, walletHeaders, type EngineOp } from './requests';

/**
 * An A/B of the gateway process's CPU per request between two builds, in one interleaved run:
 * both gateways (one process each, LOG_LEVEL=info, stdout to /dev/null) run side by side on one
 * private Redis and one simulator, and take the same fixed number of requests per operation in
 * alternating slices (A B, B A, …), so the box's drift falls on both alike. Each slice's figure is
 * the gateway process's CPU time (/proc, user + system) over its answers, and Redis's beside it.
 *
 *   npx tsx bench/hot-path-cost.ts --a <dir>/dist/src/main/gateway.js --b dist/src/main/gateway.js
 *
 * `--rate R` sends each slice at a fixed R requests/s instead of one request in flight per
 * connection: what a request costs when the process is not saturated (its timers and wake-ups weigh more).
 * `--reference` adds bench/reference-server.ts (one process) to every bet and balance slice, for
 * the gateway's ratios to the bare pass-through in the same run.
 * `--profile` then profiles B, one slice per op (busy µs per request by area, hottest functions).
 * A build outside this tree resolves its packages from this tree's node_modules (NODE_PATH).
 */
const ROOT = resolve(__dirname, '..');
const START_TIMEOUT_MS = 30_000;

const { values: args } = parseArgs({
  options: {
    a: { type: 'string', default: 'dist/src/main/gateway.js' },
    b: { type: 'string', default: 'dist/src/main/gateway.js' },
    requests: { type: 'string', default: '5000' },
    rounds: { type: 'string', default: '4' },
    connections: { type: 'string', default: '32' },
    ops: { type: 'string', default: 'balance,bet,win' },
    profile: { type: 'boolean', default: false },
    reference: { type: 'boolean', default: false },
    rate: { type: 'string' },
  },
});
const REQUESTS = Number(args.requests);
const ROUNDS = Number(args.rounds);
const CONNECTIONS = Number(args.connections);
const OPS = args.ops.split(',') as EngineOp[];
const RATE = args.rate === undefined ? undefined : Number(args.rate);

/** A slice's load: `REQUESTS` requests, one in flight per connection, or at the fixed `--rate`. */
const sliceLoad = (side: Side, op: EngineOp) => ({
  url: side.url,
  connections: CONNECTIONS,
  request: engineRequests(op, side.ids, side.sessions, side.bets),
  ...(RATE === undefined ? { durationSec: 600, amount: REQUESTS } : { durationSec: REQUESTS / RATE, rate: RATE }),
});

const setupAgent = new Agent({ connections: 8 });
const children: Child[] = [];

async function service(name: string, argv: string[], env: Record<string, string>): Promise<Child> {
  const child = new Child({ name, args: argv, env: { ...baseEnv(), ...env }, keepStdout: false, keepBytes: 8192 });
  children.push(child);
  await child.start();
  return child;
}

async function answers(url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; text: string }> {
  const res = await request(url, { method: (init.method ?? 'GET') as 'GET', headers: init.headers, body: init.body, dispatcher: setupAgent });
  return { status: res.statusCode, text: await res.body.text() };
}

interface Side {
  readonly label: 'A' | 'B' | 'reference';
  readonly url: string;
  readonly child: Child;
  readonly sessions: string[];
  readonly ids: Ids;
  readonly bets: PlacedQueue;
  readonly micros: Record<string, number[]>;
  /** What the shared Redis spent per request in the same slices. */
  readonly redisMicros: Record<string, number[]>;
}

/** One process; a build outside this tree finds its packages here. */
function sideEnv(port: number, prefix: string, simUrl: string, redisUrl: string): Record<string, string> {
  return {
    NODE_PATH: resolve(ROOT, 'node_modules'),
    ...serverEnv({ port, redisUrl, prefix, walletUrl: simUrl, processes: 1 }),
    LOG_LEVEL: 'info',
    NODE_ENV: 'production',
  };
}

async function healthy(name: string, url: string, child: Child): Promise<void> {
  await waitFor(`${name} /healthz`, async () => (await answers(`${url}/healthz`)).status === 200, START_TIMEOUT_MS, {
    intervalMs: 50,
    alive: () => child.isRunning(),
    context: () => child.output(),
  });
}

const newSide = (label: Side['label'], url: string, child: Child, sessions: string[]): Side => ({
  label,
  url,
  child,
  sessions,
  ids: new Ids(),
  bets: new PlacedQueue(),
  micros: Object.fromEntries(OPS.map((op) => [op, []])),
  redisMicros: Object.fromEntries(OPS.map((op) => [op, []])),
});

async function startSide(label: 'A' | 'B', entry: string, simUrl: string, redisUrl: string, sampleDir?: string): Promise<Side> {
  const port = await freePort();
  const sampler = sampleDir === undefined ? [] : ['--require', join(ROOT, 'bench', 'sampler.cjs')];
  const child = await service(`gateway ${label}`, [...sampler, resolve(ROOT, entry)], {
    ...(sampleDir === undefined ? {} : { BENCH_SAMPLE: 'cpu', BENCH_SAMPLE_DIR: sampleDir }),
    ...sideEnv(port, `hotpath-${label}`, simUrl, redisUrl),
  });
  const url = `http://127.0.0.1:${port}`;
  await healthy(`gateway ${label}`, url, child);
  const sessions: string[] = [];
  for (const p of identities(CONNECTIONS, `hp${label}`)) {
    const query = new URLSearchParams({ token: p.token, player_id: p.player_id, site_id: p.site_id, currency: p.currency, game_id: p.game_id });
    const res = await answers(`${url}/launch?${query.toString()}`, { headers: { accept: 'application/json' } });
    if (res.status !== 200) throw new Error(`launch at ${label}: HTTP ${res.status} ${res.text.slice(0, 300)}`);
    sessions.push((JSON.parse(res.text) as { session_id: string }).session_id);
  }
  return newSide(label, url, child, sessions);
}

/** bench/reference-server.ts (one process), its sessions written straight into Redis as `npm run bench` does; it serves bet and balance. */
async function startReference(simUrl: string, redisUrl: string): Promise<Side> {
  const port = await freePort();
  const prefix = 'hotpath-ref';
  const players = identities(CONNECTIONS, 'hpref');
  for (const p of players) {
    const body = authenticateBody(p);
    const res = await answers(`${simUrl}/api/wallet/authenticate`, { method: 'POST', headers: walletHeaders(body), body });
    if (res.status !== 200) throw new Error(`authenticate at the simulator: HTTP ${res.status} ${res.text}`);
  }
  const sessions = players.map((_, i) => `ref-session-${i}`);
  const redis = new Redis(redisUrl);
  try {
    await Promise.all(players.map((p, i) => redis.set(`${prefix}:refsession:${sessions[i]!}`, JSON.stringify(p))));
  } finally {
    redis.disconnect();
  }
  const child = await service('reference server', ['--import', 'tsx', 'bench/reference-server.ts'], sideEnv(port, prefix, simUrl, redisUrl));
  const url = `http://127.0.0.1:${port}`;
  await healthy('reference server', url, child);
  return newSide('reference', url, child, sessions);
}

/** One slice: `REQUESTS` requests of `op`; the gateway's and Redis's CPU µs per answer. */
async function slice(side: Side, op: EngineOp, redisPid: number): Promise<[number, number]> {
  const before = cpuMicros(side.child.pid);
  const redisBefore = cpuMicros(redisPid);
  const result = await runLoad(sliceLoad(side, op));
  const spent = cpuMicros(side.child.pid) - before;
  const redisSpent = cpuMicros(redisPid) - redisBefore;
  if (result.errors > 0) throw new Error(`${side.label} ${op}: ${result.errors} errors ${JSON.stringify(result.statuses)}`);
  return [spent / result.requests, redisSpent / result.requests];
}

/** With --profile: one more slice of each op through B under V8's CPU profiler (bench/sampler.cjs); busy µs per request by area and the hottest functions. */
async function profileSide(side: Side, dir: string): Promise<void> {
  const written = (extension: string): string[] => readdirSync(dir).filter((f) => f.endsWith(`.${extension}`));
  for (const op of OPS) {
    for (const f of readdirSync(dir)) rmSync(join(dir, f));
    process.kill(side.child.pid, 'SIGUSR2');
    await waitFor('sampling started', () => written('started').length === 1, START_TIMEOUT_MS);
    const result = await runLoad(sliceLoad(side, op));
    process.kill(side.child.pid, 'SIGUSR2');
    await waitFor('profile written', () => written('cpuprofile').length === 1, START_TIMEOUT_MS);
    const summary = summariseProfiles(written('cpuprofile').map((f) => join(dir, f)), ROOT, result.requests, 25);
    const per = (ms: number): string => ((ms * 1000) / result.requests).toFixed(1);
    console.log(`\n${side.label} ${op} profiled: busy ${per(summary.busyMs)} µs per request`);
    for (const a of summary.areas.slice(0, 14)) console.log(`  ${per(a.selfMs).padStart(7)} µs  ${a.area}`);
    console.log('  hottest functions:');
    for (const f of summary.top) console.log(`  ${per(f.selfMs).padStart(7)} µs  ${f.name} ${f.location}`);
  }
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((x, y) => x - y);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

async function main(): Promise<void> {
  const redis = await RedisServer.start();
  try {
    const simPort = await freePort();
    const sim = await service('simulator', ['--import', 'tsx', 'src/sim/main.ts'], simulatorEnv(simPort));
    const simUrl = `http://127.0.0.1:${simPort}`;
    await waitFor('simulator', async () => (await answers(`${simUrl}/__sim/faults`)).status === 200, START_TIMEOUT_MS, { intervalMs: 50, alive: () => sim.isRunning() });
    const a = await startSide('A', args.a, simUrl, redis.url);
    const sampleDir = args.profile ? mkdtempSync(join(tmpdir(), 'hot-path-cost-')) : undefined;
    const b = await startSide('B', args.b, simUrl, redis.url, sampleDir);
    const ref = args.reference ? await startReference(simUrl, redis.url) : undefined;
    // The reference server serves no win.
    const refOps: readonly EngineOp[] = OPS.filter((op) => op !== 'win');
    // Warm-up: every op once through each side, unmeasured.
    for (const side of [a, b]) for (const op of OPS) await slice(side, op, redis.pid);
    if (ref !== undefined) for (const op of refOps) await slice(ref, op, redis.pid);
    for (let round = 0; round < ROUNDS; round += 1) {
      const order = round % 2 === 0 ? [a, b] : [b, a];
      for (const op of OPS) {
        const sides = ref !== undefined && refOps.includes(op) ? [...order, ref] : order;
        for (const side of sides) {
          const [gateway, redisCpu] = await slice(side, op, redis.pid);
          side.micros[op]!.push(gateway);
          side.redisMicros[op]!.push(redisCpu);
        }
      }
      process.stderr.write(`[hot-path-cost] round ${round + 1}/${ROUNDS} done\n`);
    }
    const pace = RATE === undefined ? `at ${CONNECTIONS} connections` : `at ${RATE} req/s over up to ${CONNECTIONS} connections`;
    console.log(`CPU µs per request (median [each slice]), ${REQUESTS} requests per slice ${pace}, ${ROUNDS} rounds`);
    console.log(`A = ${args.a}\nB = ${args.b}`);
    for (const [what, of] of [['gateway', (s: Side) => s.micros], ['redis', (s: Side) => s.redisMicros]] as const) {
      for (const op of OPS) {
        const ma = median(of(a)[op]!);
        const mb = median(of(b)[op]!);
        const each = (s: Side): string => of(s)[op]!.map((x) => x.toFixed(0)).join(' ');
        const reference = ref !== undefined && refOps.includes(op) ? median(of(ref)[op]!) : undefined;
        const versus = reference === undefined ? '' : `  reference ${reference.toFixed(1)} [${each(ref!)}]  A/ref ${(ma / reference).toFixed(2)} B/ref ${(mb / reference).toFixed(2)}`;
        console.log(`${what.padEnd(8)} ${op.padEnd(8)} A ${ma.toFixed(1).padStart(7)} [${each(a)}]  B ${mb.toFixed(1).padStart(7)} [${each(b)}]  B/A ${(mb / ma).toFixed(3)}${versus}`);
      }
    }
    if (sampleDir !== undefined) {
      await profileSide(b, sampleDir);
      rmSync(sampleDir, { recursive: true, force: true });
    }
  } finally {
    for (const child of children.reverse()) await child.stop();
    await redis.stop();
    await setupAgent.close();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
