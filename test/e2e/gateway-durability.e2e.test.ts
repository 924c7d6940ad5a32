import { randomUUID } from 'node:crypto';
import { Code } from '../../src/wallet/codes';
import type { Child } from '../../src/lib/child';
import { spawnEntry, startWorkerProcess } from '../support/processes';
import { freePort } from '../../src/lib/free-port';
import { callsFor, startHarness, type Harness } from '../support/worker-harness';
import { waitFor } from '../../src/lib/wait-for';
import { RedisServer } from '../../src/lib/redis-server';

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

  it('SIGKILL between a bet\'s claim and its write-ahead WAIT: nothing was sent, the sweeper compensates the claim, the repeat gets that answer', async () => {
    const primary = await RedisServer.start();
    const replica = await RedisServer.start({ replicaOf: { host: '127.0.0.1', port: primary.port } });
    const onPrimary = await startHarness({ label: 'e2egwwait', env: { REDIS_URL: primary.url, WALLET_TIMEOUT_MS: '1000' } });
    try {
      await primary.waitForReplicas(1);
      const port = await freePort();
      // A long write-ahead WAIT, so the kill lands inside it.
      const gatewayEnv = { ...onPrimary.env, PORT: String(port), ENGINE_API_KEY: ENGINE_KEY, LOG_LEVEL: 'info', REDIS_MIN_REPLICAS: '1', REDIS_WAIT_MS: '5000' };
      const gateway = await spawnEntry('src/main/gateway.ts', gatewayEnv);
      children.push(gateway);
      await gateway.waitForOutput('gateway listening');
      const base = `http://127.0.0.1:${port}`;
      const token = randomUUID();
      const player = '8000000000000000002';
      const launch = await fetch(`${base}/launch?token=${token}&player_id=${player}&site_id=7&currency=EUR&game_id=slot-1`, { headers: { accept: 'application/json' } });
      expect(launch.status).toBe(200);
      const { session_id: sessionId, balance: start } = (await launch.json()) as { session_id: string; balance: number };

      await replica.kill();
      const bet = { round_id: randomUUID(), transaction_id: `b-${randomUUID().slice(0, 30)}`, amount: 10 };
      const answered = post(base, `/engine/v1/sessions/${sessionId}/bet`, bet).catch((err: unknown) => err);
      await waitFor('the bet claimed', async () => (await onPrimary.store.get(bet.transaction_id))?.state === 'pending', 10_000);
      await gateway.kill('SIGKILL');
      // The engine got no answer: its connection died with the process.
      expect(await answered).toMatchObject({ message: 'fetch failed' });
      expect(callsFor(onPrimary.sim, bet.transaction_id)).toHaveLength(0);

      // The claim is all there is. A worker's sweeper finds it past its lease, asks the wallet,
      // hears "not found" and compensates: nothing to give back, nothing taken.
      await replica.start();
      await primary.waitForReplicas(1);
      children.push(await startWorkerProcess({ ...onPrimary.env, SWEEP_INTERVAL_MS: '500' }));
      const settled = await waitFor('the lost bet compensated', async () => {
        const record = await onPrimary.store.get(bet.transaction_id);
        return record?.state === 'compensated' ? record : undefined;
      }, 45_000);
      expect(settled.compensationId).not.toBeNull();
      expect(onPrimary.sim.ledger.appliedCount(bet.transaction_id)).toBe(0);
      expect(callsFor(onPrimary.sim, bet.transaction_id, 'debit')).toHaveLength(0);
      expect(onPrimary.sim.ledger.balanceOf(player)).toBe(start.toFixed(2));

      // The engine's repeat, through a new gateway process, gets that stored outcome: refused, no money taken.
      const again = await spawnEntry('src/main/gateway.ts', gatewayEnv);
      children.push(again);
      await again.waitForOutput('gateway listening');
      const repeat = await post(base, `/engine/v1/sessions/${sessionId}/bet`, bet);
      expect(repeat.status).toBeGreaterThanOrEqual(400);
      expect(repeat.json.state).toBe('failed');
      expect(onPrimary.sim.ledger.appliedCount(bet.transaction_id)).toBe(0);
    } finally {
      await Promise.all(children.splice(0).map((c) => c.kill('SIGKILL')));
      await onPrimary.close();
      await replica.stop();
      await primary.stop();
    }
  }, 120_000);
});
