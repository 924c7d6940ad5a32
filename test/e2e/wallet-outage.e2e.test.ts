import { randomUUID } from 'node:crypto';
import { loadGatewayConfig, loadWorkerConfig } from '../../src/config/env';
import { waitFor } from '../../src/lib/wait-for';
import { startGateway, type RunningGateway } from '../../src/main/gateway';
import { createLogger } from '../../src/observability/logger';
import { startSimulator, type RunningSimulator } from '../../src/sim';
import { startWorker, type RunningWorker } from '../../workers/worker';
import { deletePrefix, testPrefix } from '../support/prefix';
import { WIRED, WIRED_WALLET, wiredEnv } from '../support/wired-gateway';

/**
 * A wallet outage of 60 s (every call answered 12 for half of it, never answered for the other
 * half; the health check failing throughout) while the engine sends a win every 450 ms: the circuit
 * breaker holds the retries back without spending their budget, so every win is credited exactly
 * once after the wallet is back and none ends dead; bets meanwhile are refused at once.
 */
const KEY = WIRED.engineKey;
const OUTAGE_MS = 60_000;
const PLAYERS = 25;
const ROUNDS = 5;

let sim: RunningSimulator;
let gateway: RunningGateway;
let worker: RunningWorker;
let prefix: string;

beforeAll(async () => {
  prefix = testPrefix('outage');
  sim = await startSimulator({ basicUser: WIRED_WALLET.user, basicPassword: WIRED_WALLET.password, signingSecret: WIRED_WALLET.secret });
  const env = { ...wiredEnv(prefix, sim.url), WALLET_TIMEOUT_MS: '1000', RETRY_DELAY_UNIT: 'ms', DEAD_CHECK_INTERVAL_MS: '600000', LOG_LEVEL: 'silent' };
  gateway = await startGateway(loadGatewayConfig(env), createLogger({ level: 'silent', name: 'outage-gateway' }), { host: '127.0.0.1' });
  worker = await startWorker({ config: loadWorkerConfig(env), logger: createLogger({ level: 'silent', name: 'outage-worker' }) });
});

afterAll(async () => {
  await worker?.close();
  await gateway?.close();
  await sim?.close();
  await deletePrefix(prefix);
});

async function post(path: string, body: Record<string, unknown>): Promise<{ status: number; json: { state?: string; error?: { code?: string } } }> {
  const res = await fetch(`${gateway.url}/engine/v1${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as { state?: string; error?: { code?: string } } };
}

async function launch(player: string): Promise<string> {
  const query = new URLSearchParams({ token: randomUUID(), player_id: player, site_id: '7', currency: 'EUR', game_id: 'slots' });
  const res = await fetch(`${gateway.url}/launch?${query}`, { headers: { accept: 'application/json' } });
  return ((await res.json()) as { session_id: string }).session_id;
}

it('rides through a 60 s outage: every win credited exactly once within its 10 retries, none dead; bets refused at once', async () => {
  const bets: { session: string; round: string; bet: string; win: string; player: string }[] = [];
  for (let p = 0; p < PLAYERS; p += 1) {
    const player = String(900_000 + p);
    const session = await launch(player);
    for (let r = 0; r < ROUNDS; r += 1) {
      const round = `o-${p}-${r}`;
      expect((await post(`/sessions/${session}/bet`, { round_id: round, transaction_id: `${round}-b`, amount: 1 })).status).toBe(200);
      bets.push({ session, round, bet: `${round}-b`, win: `${round}-w`, player });
    }
  }

  const breaker = gateway.parts.breaker;
  sim.faults.down('code');
  const outageStart = Date.now();
  const wins: Promise<{ status: number }>[] = [];
  let refusedBets: { status: number; code?: string; id: string }[] = [];
  for (const [i, b] of bets.entries()) {
    if (i === Math.floor(bets.length / 2)) sim.faults.down('hang');
    wins.push(post(`/sessions/${b.session}/win`, { round_id: b.round, transaction_id: b.win, bet_transaction_id: b.bet, amount: 2 }));
    if (refusedBets.length === 0 && breaker.state() === 'open') {
      refusedBets = await Promise.all(
        [0, 1, 2].map(async (k) => {
          const id = `${b.round}-x${k}`;
          const answer = await post(`/sessions/${b.session}/bet`, { round_id: `${b.round}-x${k}`, transaction_id: id, amount: 1 });
          return { status: answer.status, code: answer.json.error?.code, id };
        }),
      );
    }
    // The engine's pace: a win every 450 ms for the length of the outage.
    await new Promise((r) => setTimeout(r, 450));
  }
  const answers = await Promise.all(wins);
  await waitFor('the end of the outage', () => Date.now() - outageStart >= OUTAGE_MS, OUTAGE_MS);
  sim.faults.down(null);
  const recovered = Date.now();

  expect(answers.every((a) => a.status === 200 || a.status === 202)).toBe(true);
  expect(refusedBets).toHaveLength(3);
  for (const refused of refusedBets) {
    expect(refused).toMatchObject({ status: 503, code: 'WALLET_UNAVAILABLE' });
    expect(sim.walletCalls().filter((c) => c.transactionId === refused.id)).toHaveLength(0);
  }

  const records = await waitFor(
    'every win settled',
    async () => {
      const all = await Promise.all(bets.map((b) => gateway.parts.transactions.get(b.win)));
      return all.every((r) => r !== undefined && (r.state === 'succeeded' || r.state === 'dead')) ? all : undefined;
    },
    120_000,
    { intervalMs: 250 },
  );
  process.stderr.write(`wallet outage: ${bets.length} wins, all settled ${Date.now() - recovered} ms after the wallet came back\n`);
  for (const [i, record] of records.entries()) {
    expect({ id: bets[i]!.win, state: record!.state }).toEqual({ id: bets[i]!.win, state: 'succeeded' });
    // attempts counts every try, the first included: at most 1 + the spec's 10 retries.
    expect(record!.attempts).toBeLessThanOrEqual(11);
    expect(sim.ledger.appliedCount(bets[i]!.win)).toBe(1);
  }
}, 240_000);
