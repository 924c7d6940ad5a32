import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { loadGatewayConfig } from '../src/config/env';
import { RedisServer } from '../src/lib/redis-server';
import { waitFor } from '../src/lib/wait-for';
import { startGateway, type RunningGateway } from '../src/main/gateway';
import { createLogger } from '../src/observability/logger';
import { createMetrics } from '../src/observability/metrics';
import { startSimulator, type RunningSimulator } from '../src/sim';
import { runToExit } from './in-process';

/**
 * `npx tsx bench/hanging-wallet.ts [rate] [seconds] [slices]` (default 100 10 3): a healthy wallet's
 * bet latency while another wallet of the same gateway hangs every call, against the same load
 * with the other wallet answering (contract 11: one wallet down never slows another).
 *
 * One gateway (in this process, one registry of two wallets, default settings: `timeout_ms` 5000,
 * `max_in_flight` 256), two simulators, a private Redis. Bets at casino-a leave at a fixed rate
 * (`rate` a second, latency from each bet's scheduled time) while bets at casino-b leave at a
 * fifth of it. In a `hang` slice casino-b's simulator holds every call unanswered: its bets wait
 * out their deadline until its breaker opens, then are refused at once. Slices alternate (calm,
 * hang, hang, calm, …) so the box's drift falls on both; after a hang slice casino-b comes back and
 * its breaker closes before the next slice. docs/performance.md keeps the numbers.
 */
const CREDENTIALS = { user: 'gw', password: 'gw-pass', secret: 'gw-secret' } as const;
const ENGINE_KEY = 'hanging-wallet-bench-key';
const LANES = 16;
const silent = new Writable({ write: (_chunk, _encoding, done) => done() });

interface Bets {
  readonly gateway: RunningGateway;
  readonly sessions: readonly string[];
  readonly label: string;
  next: number;
}

async function launch(gateway: RunningGateway, wallet: string, lanes: number, label: string): Promise<Bets> {
  const sessions: string[] = [];
  for (let i = 0; i < lanes; i += 1) {
    const res = await fetch(`${gateway.url}/launch/${wallet}?token=${label}-${i}&player_id=${i + 1}&site_id=1&currency=EUR&game_id=g`, { headers: { accept: 'application/json' } });
    if (res.status !== 200) throw new Error(`launch at ${wallet} answered ${res.status}`);
    sessions.push(((await res.json()) as { session_id: string }).session_id);
  }
  return { gateway, sessions, label, next: 0 };
}

/** One bet, its latency in ms from `scheduledAt`, and its status. */
async function bet(bets: Bets, scheduledAt: number): Promise<{ ms: number; status: number }> {
  const n = bets.next++;
  const id = `${bets.label}-${n}`;
  const res = await fetch(`${bets.gateway.url}/engine/v1/sessions/${encodeURIComponent(bets.sessions[n % bets.sessions.length]!)}/bet`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ENGINE_KEY}`, 'content-type': 'application/json' },
    body: `{"round_id":"${id}","transaction_id":"${id}","amount":0.01}`,
  });
  await res.arrayBuffer();
  return { ms: performance.now() - scheduledAt, status: res.status };
}

/** Bets leaving at `rate` a second for `seconds`, whatever the answers do; resolves once all answered. */
async function fixedRate(bets: Bets, rate: number, seconds: number): Promise<{ ms: number; status: number }[]> {
  const started = performance.now();
  const total = Math.round(rate * seconds);
  const answers: Promise<{ ms: number; status: number }>[] = [];
  for (let i = 0; i < total; i += 1) {
    const at = started + (i * 1000) / rate;
    const wait = at - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    answers.push(bet(bets, at).catch(() => ({ ms: performance.now() - at, status: 0 })));
  }
  return Promise.all(answers);
}

const percentile = (sorted: readonly number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0;

async function main(): Promise<void> {
  const rate = Number(process.argv[2] ?? 100);
  const seconds = Number(process.argv[3] ?? 10);
  const slices = Number(process.argv[4] ?? 3);
  const redis = await RedisServer.start();
  const sims: RunningSimulator[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'wgw-hanging-'));
  let gateway: RunningGateway | undefined;
  try {
    for (let i = 0; i < 2; i += 1) sims.push(await startSimulator({ basicUser: CREDENTIALS.user, basicPassword: CREDENTIALS.password, signingSecret: CREDENTIALS.secret }));
    const [simA, simB] = sims as [RunningSimulator, RunningSimulator];
    const wallet = (id: string, sim: RunningSimulator, provider: string) => ({ id, base_url: sim.url, basic_user: CREDENTIALS.user, basic_password: CREDENTIALS.password, signing_secret: CREDENTIALS.secret, provider_id: provider });
    const file = join(dir, 'wallets.json');
    writeFileSync(file, JSON.stringify({ wallets: [wallet('casino-a', simA, '1'), wallet('casino-b', simB, '2')], engines: [{ id: 'studio', keys: [ENGINE_KEY], wallets: ['casino-a', 'casino-b'] }] }));
    const config = loadGatewayConfig({ PORT: '0', REDIS_URL: redis.url, QUEUE_PREFIX: 'hanging-bench', WALLETS_FILE: file, GATEWAY_PROCESSES: '1' });
    gateway = await startGateway(config, createLogger({ level: 'silent', name: 'hanging-bench', destination: silent }), { host: '127.0.0.1', metrics: createMetrics({ defaultMetrics: false }) });
    const breakerB = gateway.parts.wallets.get('casino-b')!.breaker;
    const a = await launch(gateway, 'casino-a', LANES, 'a');
    const b = await launch(gateway, 'casino-b', LANES, 'b');
    // Warm-up: both wallets answering.
    await Promise.all([fixedRate(a, rate, 2), fixedRate(b, rate / 5, 2)]);

    const latencies: Record<'calm' | 'hang', number[]> = { calm: [], hang: [] };
    const failedA: Record<'calm' | 'hang', number> = { calm: 0, hang: 0 };
    const answersB: Record<'calm' | 'hang', Record<string, number>> = { calm: {}, hang: {} };
    for (let s = 0; s < slices * 2; s += 1) {
      // calm hang | hang calm | calm hang …
      const kind = (s % 4 === 0 || s % 4 === 3) ? 'calm' : 'hang';
      if (kind === 'hang') simB.faults.down('hang');
      const [atA, atB] = await Promise.all([fixedRate(a, rate, seconds), fixedRate(b, rate / 5, seconds)]);
      for (const r of atA) {
        latencies[kind].push(r.ms);
        if (r.status !== 200) failedA[kind] += 1;
      }
      for (const r of atB) answersB[kind][String(r.status)] = (answersB[kind][String(r.status)] ?? 0) + 1;
      const breakerSeen = breakerB.state();
      if (kind === 'hang') {
        simB.faults.down(null);
        await waitFor('casino-b\'s breaker closed again', () => breakerB.state() === 'closed', 120_000, { intervalMs: 200 });
      }
      console.error(`slice ${s + 1}/${slices * 2} ${kind}: casino-a p99 ${percentile([...atA.map((r) => r.ms)].sort((x, y) => x - y), 0.99).toFixed(1)} ms; casino-b breaker at its end ${breakerSeen}`);
    }
    console.log(`casino-a bets at ${rate}/s, casino-b at ${rate / 5}/s, ${slices} slices of ${seconds} s each way`);
    console.log('casino-b      casino-a bets  p50 ms  p99 ms  max ms  not 200   casino-b answers');
    for (const kind of ['calm', 'hang'] as const) {
      const sorted = latencies[kind].sort((x, y) => x - y);
      console.log(
        `${kind === 'calm' ? 'answering' : 'hanging  '}     ${String(sorted.length).padStart(13)}  ${percentile(sorted, 0.5).toFixed(2).padStart(6)}  ${percentile(sorted, 0.99).toFixed(2).padStart(6)}  ${(sorted.at(-1) ?? 0).toFixed(1).padStart(6)}  ${String(failedA[kind]).padStart(7)}   ${JSON.stringify(answersB[kind])}`,
      );
    }
  } finally {
    for (const sim of sims) sim.faults.down(null);
    await gateway?.close();
    for (const sim of sims) await sim.close();
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

runToExit(main);
