import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import Redis from 'ioredis';
import { Pool } from 'undici';
import { RedisServer } from '../src/lib/redis-server';
import { BENCH_API_KEY, runToExit, startBenchGateway, startBenchSimulator, type BenchGateway } from './in-process';

/**
 * `npx tsx bench/launch-flood.ts [replays]`: what one launch URL replayed by an outsider does to
 * Redis for everybody else. One gateway in this process and the simulator, on a private
 * redis-server (so its SLOWLOG and counters are the run's alone), while another process — another
 * Redis client — PINGs Redis back to back and keeps each answer's latency.
 *
 * 1. the URL replayed `replays` times (default 10,000), 64 at a time, with the default limits;
 * 2. the worst a token can be made to hold: the same replays with the launch rate lifted, so the
 *    token fills up to TOKEN_SESSION_CAP sessions, then 1,000 `end`s of one of its sessions (each
 *    walks the token's sessions: the step that walked every session ever launched on the token).
 *
 * Prints, per phase (after an idle one: the box's own floor): the answers, the other client's PING
 * latency (p50, p99, max), Redis's time per script call and the commands it logged as slower than
 * 1 ms (SLOWLOG). Speed here depends on the box; no test times it.
 */
const CONCURRENCY = 64;
const ENDS = 1_000;
const SLOW_US = 1_000;

/** The other client: PINGs back to back until its stdin closes, then prints its latencies (ms) as JSON. */
const PROBE = `
const Redis = require('ioredis');
const client = new Redis(process.argv[1]);
const ms = [];
let running = true;
process.stdin.on('end', () => (running = false)).resume();
(async () => {
  while (running) {
    const t0 = process.hrtime.bigint();
    await client.ping();
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  process.stdout.write(JSON.stringify(ms));
  client.disconnect();
})();
`;

interface Probe {
  readonly child: ChildProcessWithoutNullStreams;
  stop(): Promise<number[]>;
}

function startProbe(url: string): Probe {
  const child = spawn(process.execPath, ['-e', PROBE, url], { cwd: process.cwd() });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    async stop() {
      child.stdin.end();
      await exited;
      return JSON.parse(out) as number[];
    },
  };
}

function summary(ms: readonly number[]): string {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (q: number): string => (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN).toFixed(2);
  return `${sorted.length} PINGs: p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${(sorted.at(-1) ?? NaN).toFixed(2)} ms`;
}

/** Redis's own time per script call since the phase began (INFO commandstats: wall time inside Redis). */
async function scriptTime(redis: Redis): Promise<string> {
  const stats = /^cmdstat_evalsha:calls=(\d+),usec=(\d+),usec_per_call=([0-9.]+)/m.exec(await redis.info('commandstats'));
  return stats === null ? 'no script calls' : `${stats[1]} script calls, ${stats[3]} µs each on average inside Redis`;
}

async function slowCommands(redis: Redis): Promise<string> {
  const entries = (await redis.call('SLOWLOG', 'GET', '128')) as [number, number, number, string[]][];
  await redis.call('SLOWLOG', 'RESET');
  if (entries.length === 0) return `no command took ${SLOW_US / 1000} ms or more`;
  const longest = entries.reduce((a, b) => (b[2] > a[2] ? b : a));
  return `${entries.length} commands took ${SLOW_US / 1000} ms or more; the longest ${(longest[2] / 1000).toFixed(2)} ms (${longest[3].slice(0, 2).join(' ')})`;
}

/** `count` requests of `path`, CONCURRENCY at a time; the answers counted by status. */
async function replay(url: string, path: string, count: number, method: 'GET' | 'POST' = 'GET', headers: Record<string, string> = {}, body?: string): Promise<Record<number, number>> {
  const pool = new Pool(url, { connections: CONCURRENCY });
  const statuses: Record<number, number> = {};
  let next = 0;
  try {
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < count) {
          next += 1;
          const res = await pool.request({ method, path, headers: { accept: 'application/json', ...headers }, body });
          await res.body.dump();
          statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
        }
      }),
    );
  } finally {
    await pool.close();
  }
  return statuses;
}

async function phase(label: string, redis: Redis, url: string, run: () => Promise<string>): Promise<void> {
  await redis.call('SLOWLOG', 'RESET');
  await redis.call('CONFIG', 'RESETSTAT');
  const probe = startProbe(url);
  // The probe's first PINGs (its connection) are not the flood's.
  await new Promise((resolve) => setTimeout(resolve, 500));
  const t0 = performance.now();
  const answers = await run();
  const seconds = (performance.now() - t0) / 1000;
  const latencies = await probe.stop();
  console.log(`${label}\n  ${answers} in ${seconds.toFixed(1)} s\n  other client: ${summary(latencies)}\n  Redis: ${await scriptTime(redis)}; ${await slowCommands(redis)}`);
}

const launchPath = (bench: BenchGateway): string => `/launch?token=${bench.nonce}-flood&player_id=7&site_id=7&currency=EUR&game_id=g`;

async function main(): Promise<void> {
  const replays = Number(process.argv[2] ?? 10_000);
  const sim = await startBenchSimulator();
  const server = await RedisServer.start({ aof: 'off' });
  const redis = new Redis(server.url);
  try {
    await redis.call('CONFIG', 'SET', 'slowlog-log-slower-than', String(SLOW_US));
    await redis.call('CONFIG', 'SET', 'slowlog-max-len', '128');

    // What this box does to PING latency with nothing else asked of Redis: the floor of the figures below.
    await phase('0. idle (no load), 5 s', redis, server.url, async () => {
      await new Promise((resolve) => setTimeout(resolve, 5_000));
      return 'nothing sent';
    });

    const limited = await startBenchGateway('launch-flood', sim, { REDIS_URL: server.url });
    await phase(`1. one launch URL replayed ${replays} times (default limits)`, redis, server.url, async () => {
      const statuses = await replay(limited.gateway.url, launchPath(limited), replays);
      return `answers ${JSON.stringify(statuses)}`;
    });
    await limited.gateway.close();

    const unlimited = await startBenchGateway('launch-flood', sim, { REDIS_URL: server.url, TOKEN_LAUNCHES_PER_MINUTE: String(replays * 10) });
    let sessionId = '';
    await phase(`2a. the same, launch rate lifted: the token fills up to TOKEN_SESSION_CAP`, redis, server.url, async () => {
      const statuses = await replay(unlimited.gateway.url, launchPath(unlimited), replays);
      const keys = await redis.keys(`launch-flood-${unlimited.nonce}:token-sessions:*`);
      const members = await redis.smembers(keys[0]!);
      sessionId = members[0]!;
      return `answers ${JSON.stringify(statuses)}; the token holds ${members.length} sessions`;
    });
    await phase(`2b. ${ENDS} ends of one session on that full token`, redis, server.url, async () => {
      const statuses = await replay(unlimited.gateway.url, `/engine/v1/sessions/${sessionId}/end`, ENDS, 'POST', { authorization: `Bearer ${BENCH_API_KEY}`, 'content-type': 'application/json' }, '{}');
      return `answers ${JSON.stringify(statuses)}`;
    });
    await unlimited.gateway.close();
  } finally {
    redis.disconnect();
    await server.stop();
    await sim.close();
  }
}

runToExit(main);
