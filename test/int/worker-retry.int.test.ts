import { retryJobId } from '../../src/duties/queues';
import { retryDelayMs } from '../../src/duties/retry-policy';
import { Code } from '../../src/wallet/codes';
import type { RunningWorker } from '../../workers/worker';
import { TRANSPORTS } from '../support/transports';
import { callsFor, startHarness, newId, type Harness, type Player } from '../support/worker-harness';
import { fromMinor, toMinor } from '../../src/lib/money';
import { waitFor } from '../../src/lib/wait-for';

let h: Harness;
let worker: RunningWorker;
let player: Player;


const settled = (id: string) => waitFor(`${id} final`, async () => {
  const record = await h.store.get(id);
  return record !== undefined && record.state !== 'pending' ? record : undefined;
}, 25_000);

/** Gaps between consecutive wallet calls of one transaction, in ms. */
function gaps(id: string): number[] {
  const at = callsFor(h.sim, id, 'credit').map((c) => c.at);
  return at.slice(1).map((t, i) => t - at[i]!);
}

describe.each(TRANSPORTS)('over $label', ({ tls }) => {
  beforeAll(async () => {
    h = await startHarness({ label: 'wretry', tls });
    worker = await h.startWorker();
    player = await h.newPlayer();
  });

  afterEach(() => h.sim.faults.clear());

  afterAll(async () => {
    await h.close();
  });

  describe('credit retries on the spec schedule', () => {
    it('retries 12, 12, 12 after 301, 477, 602 ms, then succeeds with the identical body', async () => {
      const start = h.sim.ledger.balanceOf(player.fields.player_id)!;
      const bet = await h.bet(player, '10.00');
      const id = newId('credit');
      h.sim.faults.failNext('credit', 3, Code.InternalServiceError, { transactionId: id });
      expect((await h.settleInline(player, 'credit', bet, { id, amount: '25.00' })).next).toBe('retry');

      const record = await settled(id);
      expect(record).toMatchObject({ state: 'succeeded', attempts: 4, lastWalletCode: Code.Success, history: [12, 12, 12, 1] });
      const calls = callsFor(h.sim, id, 'credit');
      expect(calls).toHaveLength(4);
      expect(new Set(calls.map((c) => c.rawBody)).size).toBe(1);
      const measured = gaps(id);
      [1, 2, 3].forEach((n, i) => {
        expect(measured[i]).toBeGreaterThanOrEqual(retryDelayMs(n, 'ms') - 2);
        expect(measured[i]).toBeLessThan(retryDelayMs(n, 'ms') + 750);
      });
      expect(h.sim.ledger.appliedCount(id)).toBe(1);
      expect(h.sim.ledger.balanceOf(player.fields.player_id)).toBe((Number(start) - 10 + 25).toFixed(2));
      expect(await h.sessions.get(player.session.sessionId)).toMatchObject({ balance: h.sim.ledger.balanceOf(player.fields.player_id) });
    });

    it('stops after 3 retries caused by 34: exactly 4 attempts, then dead and listed', async () => {
      const { id } = await h.winAfter(player, (creditId) => h.sim.faults.failNext('credit', 50, Code.TransactionNotFound, { transactionId: creditId }));

      const record = await settled(id);
      expect(record).toMatchObject({ state: 'dead', attempts: 4, lastWalletCode: Code.TransactionNotFound });
      expect(callsFor(h.sim, id)).toHaveLength(4);
      expect((await h.store.listDead(0, 100)).ids).toContain(id);
      // dead work still holds its token: no terminate while an operator must act (contract 5.6)
      expect(await h.sessions.pendingCount(player.session)).toBe(1);
      const dead = await worker.metrics.deadTransactions.get();
      expect(dead.values.find((v) => v.labels.kind === 'credit')?.value).toBeGreaterThanOrEqual(1);
      // ended through UnrecoverableError: the job is failed at once, not retried by BullMQ
      const job = await h.duties.queues.shards[0]!.retry.getJob(retryJobId(id));
      expect(await job?.getState()).toBe('failed');
    });

    it('stops after 10 retries of 12: exactly 11 attempts, then dead', async () => {
      const { id } = await h.winAfter(player, (creditId) => h.sim.faults.failNext('credit', 50, Code.InternalServiceError, { transactionId: creditId }));

      const record = await settled(id);
      expect(record).toMatchObject({ state: 'dead', attempts: 11, lastWalletCode: Code.InternalServiceError });
      expect(record.note).toMatch(/10 retries/);
      expect(callsFor(h.sim, id)).toHaveLength(11);
      const measured = gaps(id);
      measured.forEach((gap, i) => expect(gap).toBeGreaterThanOrEqual(retryDelayMs(i + 1, 'ms') - 2));
    }, 40_000);

    it('ends at once on a code outside the retry list: dead, since the engine was answered (never failed)', async () => {
      const bet = await h.bet(player);
      // The worker makes the first send here: a record whose inline call never settled. It may have
      // reached the wallet with a gateway that died, so it counts as one unknown try (contract 5.3).
      const claimed = await h.claimOnly(player, 'credit', bet);
      h.sim.faults.failNext('credit', 1, Code.AmountMismatch, { transactionId: claimed.transactionId });
      await h.duties.enqueueRetry(claimed, 0);

      const record = await settled(claimed.transactionId);
      expect(record).toMatchObject({ state: 'dead', attempts: 2, history: ['unknown', Code.AmountMismatch], lastWalletCode: Code.AmountMismatch });
      expect(record.error).toMatchObject({ code: 'WALLET_REJECTED', walletCode: Code.AmountMismatch });
      // one send; then `status`, since the try counted unknown may have been applied
      expect(callsFor(h.sim, claimed.transactionId).map((c) => c.operation)).toEqual(['credit', 'status']);
      // The record settles inside the run; BullMQ marks the job failed only after the run threw.
      const job = await waitFor('the job failed for good', async () => {
        const found = await h.duties.queues.shards[0]!.retry.getJob(retryJobId(claimed.transactionId));
        return found !== undefined && (await found.getState()) === 'failed' ? found : undefined;
      });
      expect(job.attemptsMade).toBe(1);
    });

    it('counts an unknown outcome (a reset connection) as a retry and resends the same bytes', async () => {
      const { id } = await h.winAfter(player, (creditId) => {
        h.sim.faults.failNext('credit', 1, Code.ConcurrentRequest, { transactionId: creditId });
        h.sim.faults.applyThenDrop('credit', 1, { mode: 'reset', transactionId: creditId });
      });

      const record = await settled(id);
      expect(record).toMatchObject({ state: 'succeeded', attempts: 3, history: [Code.ConcurrentRequest, 'unknown', Code.Success] });
      expect(new Set(callsFor(h.sim, id).map((c) => c.rawBody)).size).toBe(1);
      expect(h.sim.ledger.appliedCount(id)).toBe(1);
    });

    it('a credit the wallet applies after the deadline, answering late, is credited exactly once while its retry overtakes it', async () => {
      const bet = await h.bet(player);
      const start = h.sim.ledger.balanceOf(player.fields.player_id)!;
      const id = newId('credit');
      // The inline attempt gives up at WALLET_TIMEOUT_MS (1000); the wallet applies it at 1500 and
      // answers into a request the gateway has dropped, after the worker's retry (due at ~1301) landed.
      h.sim.faults.delayNext('credit', 1, 1500, { transactionId: id });
      await h.settleInline(player, 'credit', bet, { id, amount: '25.00' });

      const record = await settled(id);
      expect(record).toMatchObject({ state: 'succeeded', history: ['unknown', Code.Success] });
      const both = await waitFor('the late credit handled at the wallet', () => {
        const calls = callsFor(h.sim, id, 'credit');
        return calls.length === 2 && calls.every((c) => c.code !== undefined) ? calls : undefined;
      }, 5_000);
      expect(new Set(both.map((c) => c.rawBody)).size).toBe(1);
      expect(h.sim.ledger.appliedCount(id)).toBe(1);
      expect(h.sim.ledger.balanceOf(player.fields.player_id)).toBe(fromMinor(toMinor(start, 2) + 2500n, 2));
    });

    it('a second enqueue of the same transaction makes no second job', async () => {
      const { bet, id } = await h.winAfter(player, (creditId) => h.sim.faults.failNext('credit', 2, Code.UserOffline, { transactionId: creditId }));
      await h.duties.enqueueRetry({ ...bet, transactionId: id }, 0);
      await h.duties.enqueueRetry({ ...bet, transactionId: id }, 0);

      const record = await settled(id);
      expect(record).toMatchObject({ state: 'succeeded', attempts: 3 });
      expect(callsFor(h.sim, id)).toHaveLength(3);
    });
  });
});
