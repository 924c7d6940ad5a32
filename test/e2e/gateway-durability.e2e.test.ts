import { randomUUID } from 'node:crypto';
import { Code } from '../../src/wallet/codes';
import type { Child } from '../../src/lib/child';
import { spawnEntry, startWorkerProcess } from '../support/processes';
import { freePort } from '../../src/lib/free-port';
import { callsFor, startHarness, type Harness } from '../support/worker-harness';
import { waitFor } from '../../src/lib/wait-for';

/**
 * The gateway as a real process (src/main/gateway.ts): once it answered 202 for a win, the credit
 * reaches the wallet even though the gateway is SIGKILLed right after and no worker ran yet.
 */
const ENGINE_KEY = 'e2e-engine-key';
let h: Harness;
const children: Child[] = [];

beforeAll(async () => {
  h = await startHarness({ label: 'e2egw', env: { WALLET_TIMEOUT_MS: '1000' } });
});

afterAll(async () => {
  await Promise.all(children.splice(0).map((c) => c.kill('SIGKILL')));
  await h.close();
});

async function post(base: string, path: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ENGINE_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

describe('gateway process', () => {
  it('SIGKILL right after a 202 win: a worker started later credits it exactly once', async () => {
    const port = await freePort();
    const gateway = await spawnEntry('src/main/gateway.ts', { ...h.env, PORT: String(port), ENGINE_API_KEY: ENGINE_KEY, LOG_LEVEL: 'info' });
    children.push(gateway);
    await gateway.waitForOutput('gateway listening');
    const base = `http://127.0.0.1:${port}`;

    const token = randomUUID();
    const player = '8000000000000000001';
    const launch = await fetch(`${base}/launch?token=${token}&player_id=${player}&site_id=7&currency=EUR&game_id=slot-1`, {
      headers: { accept: 'application/json' },
      redirect: 'manual',
    });
    expect(launch.status).toBe(200);
    const { session_id: sessionId, balance: start } = (await launch.json()) as { session_id: string; balance: number };

    const roundId = randomUUID();
    const betId = `b-${randomUUID().slice(0, 30)}`;
    const winId = `w-${randomUUID().slice(0, 30)}`;
    expect((await post(base, `/engine/v1/sessions/${sessionId}/bet`, { round_id: roundId, transaction_id: betId, amount: 10 })).status).toBe(200);

    h.sim.faults.failNext('credit', 2, Code.InternalServiceError, { transactionId: winId });
    const win = await post(base, `/engine/v1/sessions/${sessionId}/win`, { round_id: roundId, transaction_id: winId, bet_transaction_id: betId, amount: 30 });
    expect(win.status).toBe(202);
    expect(win.json.state).toBe('pending');
    await gateway.kill('SIGKILL');

    expect(callsFor(h.sim, winId)).toHaveLength(1);
    children.push(await startWorkerProcess(h.env));
    await waitFor('credit applied', async () => (await h.store.get(winId))?.state === 'succeeded', 30_000);
    expect(h.sim.ledger.appliedCount(winId)).toBe(1);
    expect(callsFor(h.sim, winId)).toHaveLength(3);
    expect(h.sim.ledger.balanceOf(player)).toBe((start - 10 + 30).toFixed(2));
  }, 60_000);
});
