import { retryJobId } from '../../src/duties/queues';
import { Code } from '../../src/wallet/codes';
import { keysFor } from '../../src/store/keys';
import type { Child } from '../../src/lib/child';
import { spawnEntry, startWorkerProcess } from '../support/processes';
import { callsFor, startHarness, newId, type Harness, type Player } from '../support/worker-harness';
import { waitFor } from '../../src/lib/wait-for';

/**
 * Workers as real child processes (workers/main.ts through tsx), killed with SIGKILL or stopped
 * with SIGTERM while credits retry. The simulator's ledger counts how often each credit applied.
 */
let h: Harness;
let player: Player;
const children: Child[] = [];

async function worker(overrides: Record<string, string> = {}): Promise<Child> {
  const child = await startWorkerProcess({ ...h.env, ...overrides });
  children.push(child);
  return child;
}

beforeAll(async () => {
  h = await startHarness({ label: 'e2eworker', env: { WALLET_TIMEOUT_MS: '1000', SWEEP_INTERVAL_MS: '2000' } });
  player = await h.newPlayer();
});

afterEach(async () => {
  h.sim.faults.clear();
  await Promise.all(children.splice(0).map((c) => c.kill('SIGKILL')));
});

afterAll(async () => {
  await h.close();
});


describe('worker processes', () => {
  it('a worker SIGKILLed while a credit waits between retries: another worker finishes it, credited once', async () => {
    const { id } = await h.winAfter(player, (creditId) => h.sim.faults.failNext('credit', 3, Code.InternalServiceError, { transactionId: creditId }));

    const first = await worker();
    // Its first retry went out and was answered 12; the job now waits in Redis for retry 2.
    await waitFor('second attempt settled', async () => (await h.store.get(id))?.history.length === 2 && (await h.duties.queues.shards[0]!.retry.getJobState(retryJobId(id))) === 'delayed');
    await first.kill('SIGKILL');
    expect(await h.store.get(id)).toMatchObject({ state: 'pending', attempts: 2 });

    await worker();
    expect(await h.inState(id, 'succeeded', 30_000)).toMatchObject({ attempts: 4, history: [12, 12, 12, 1] });
    expect(h.sim.ledger.appliedCount(id)).toBe(1);
    expect(callsFor(h.sim, id)).toHaveLength(4);
  }, 60_000);

  it('a worker SIGKILLed in the middle of a wallet call: the stalled job is taken up again, credited once', async () => {
    const { id } = await h.winAfter(player, (creditId) => {
      h.sim.faults.failNext('credit', 1, Code.InternalServiceError, { transactionId: creditId });
      // The worker's call applies at the wallet and its answer never comes back.
      h.sim.faults.applyThenDrop('credit', 1, { mode: 'hang', transactionId: creditId });
    });

    const first = await worker({ WALLET_TIMEOUT_MS: '1500' });
    await waitFor('worker call applied', async () => callsFor(h.sim, id).some((c) => c.applied));
    // The try was recorded before it went out.
    expect(await h.store.get(id)).toMatchObject({ attempts: 2, history: [12, 'unknown'] });
    await first.kill('SIGKILL');

    await worker({ WALLET_TIMEOUT_MS: '1500' });
    // Back to wait once the dead worker's lock ran out (lockDuration 8 s here), then retried.
    const record = await h.inState(id, 'succeeded', 45_000);
    expect(record).toMatchObject({ attempts: 3, history: [12, 'unknown', 1] });
    expect(h.sim.ledger.appliedCount(id)).toBe(1);
  }, 70_000);

  it('two workers racing over the same queue: every credit applied once, no attempt sent twice', async () => {
    await Promise.all([worker(), worker()]);
    const ids: string[] = [];
    for (let i = 0; i < 20; i += 1) {
      const bet = await h.bet(player, '1.00');
      const id = newId('credit');
      // Retry codes that are not outage evidence: 40 failures of 12/42 over 20 transactions at once
      // would rightly open the wallet circuit breaker, which is not what this test is about.
      h.sim.faults.failNext('credit', 2, i % 2 === 0 ? Code.UserOffline : Code.SiteDisabled, { transactionId: id });
      await h.settleInline(player, 'credit', bet, { id, amount: '2.00' });
      ids.push(id);
    }
    for (const id of ids) await h.inState(id, 'succeeded', 30_000);
    for (const id of ids) {
      expect(h.sim.ledger.appliedCount(id)).toBe(1);
      expect(callsFor(h.sim, id)).toHaveLength(3);
      expect(await h.store.get(id)).toMatchObject({ attempts: 3 });
    }
  }, 60_000);

  it('SIGTERM: the job in hand finishes, then the worker exits cleanly', async () => {
    const { id } = await h.winAfter(player, (creditId) => {
      h.sim.faults.failNext('credit', 1, Code.InternalServiceError, { transactionId: creditId });
      h.sim.faults.latency('credit', 800);
    });

    const child = await worker();
    await waitFor('worker call started', async () => callsFor(h.sim, id).length === 2);
    expect(await child.kill('SIGTERM')).toBe(0);
    expect(await h.store.get(id)).toMatchObject({ state: 'succeeded', attempts: 2 });
    expect(child.output()).toContain('"msg":"worker stopped"');
  }, 30_000);

  it('SIGTERM while the start-up sweep still reads a backlog: the job in hand finishes, then the worker exits cleanly', async () => {
    // A long first sweep: a thousand due ids in the pending index whose keys are large hashes that
    // are no records (no id field), so each costs a heavy read and is then passed over.
    const keys = keysFor(h.prefix);
    const pending = keys.pendingIndex();
    const ghosts = Array.from({ length: 1000 }, (_, i) => `ghost-${i}`);
    const filler = Array.from({ length: 400 }, (_, i) => [`f${i}`, 'x'.repeat(20)]).flat();
    const setup = h.redis.pipeline();
    for (const ghost of ghosts) setup.hset(keys.transaction(ghost), ...filler);
    setup.zadd(pending, ...ghosts.flatMap((ghost) => [0, ghost]));
    await setup.exec();
    const { id } = await h.winAfter(player, (creditId) => {
      h.sim.faults.failNext('credit', 1, Code.InternalServiceError, { transactionId: creditId });
      h.sim.faults.latency('credit', 800);
    });
    try {
      // Not startWorkerProcess: the signal goes as soon as the job's call is out, start finished or not.
      const child = await spawnEntry('workers/main.ts', { ...h.env, LOG_LEVEL: 'info' });
      children.push(child);
      await waitFor('worker call started', async () => callsFor(h.sim, id).length === 2);
      expect(await child.kill('SIGTERM')).toBe(0);
      expect(await h.store.get(id)).toMatchObject({ state: 'succeeded', attempts: 2 });
      expect(h.sim.ledger.appliedCount(id)).toBe(1);
      expect(child.output()).toContain('"msg":"worker stopped"');
    } finally {
      await h.redis.zrem(pending, ...ghosts);
      await h.redis.del(...ghosts.map((ghost) => keys.transaction(ghost)));
    }
  }, 30_000);
});
