import { compensationFor } from '../../src/duties/compensation';
import { retryJobId } from '../../src/duties/queues';
import { compensationTransactionId } from '../../src/duties/compensation-id';
import { afterInlineAttempt } from '../../src/duties/settlement';
import { Code } from '../../src/wallet/codes';
import type { TransactionRecord } from '../../src/store/types';
import type { WalletOutcome } from '../../src/wallet/protocol';
import { TRANSPORTS } from '../support/transports';
import { callsFor, startHarness, newId, type Harness, type Player } from '../support/worker-harness';
import { waitFor } from '../../src/lib/wait-for';

let h: Harness;
let player: Player;


const balance = () => h.sim.ledger.balanceOf(player.fields.player_id)!;

/** The bet's compensation, linked to the refund claimed (and out at the wallet) before it. */
async function linkCompensation(bet: TransactionRecord, lost: WalletOutcome, refundId: string): Promise<void> {
  const next = afterInlineAttempt({ record: bet, outcome: lost, unit: 'ms', now: Date.now() });
  if (next.kind !== 'compensate') throw new Error('expected compensate');
  const started = await h.store.beginCompensation({ debit: bet, error: next.error, ...next.progress, compensation: compensationFor(bet, Date.now()), leaseUntil: Date.now() + 10_000 });
  expect(started).toEqual({ kind: 'linked', compensationId: refundId });
  // The link queues the refund's job at once; the worker leaves it alone while its inline call may be out.
  await h.duties.enqueueRetry({ ...bet, transactionId: refundId }, 0);
  await waitFor('the refund job set aside until the inline call is over', async () => (await h.duties.queues.shards[0]!.retry.getJobState(retryJobId(refundId))) === 'delayed', 10_000);
}

const debitSettled = (id: string) =>
  waitFor(`debit ${id} settled`, async () => {
    const record = await h.store.get(id);
    return record !== undefined && record.state !== 'compensating' ? record : undefined;
  }, 20_000);

const lostDebit = (of: Player = player) => h.lostDebit(of);

describe.each(TRANSPORTS)('over $label', ({ tls }) => {
  beforeAll(async () => {
    // A short deadline for the inline debit that meets a hung answer.
    h = await startHarness({ label: 'wcomp', tls, env: { WALLET_TIMEOUT_MS: '400' } });
    await h.startWorker();
    player = await h.newPlayer();
  });

  afterEach(() => h.sim.faults.clear());

  afterAll(async () => {
    await h.close();
  });

  describe('debit compensation', () => {
    it.each([Code.UnknownError, Code.InternalServiceError, Code.InternalServiceError13, Code.ClientError])(
      'a debit refused with %i is rolled back; the wallet never applied it, so status ends it',
      async (code) => {
        const start = balance();
        h.sim.faults.failNext('debit', 1, code);
        const { debit, compensationId } = await h.refusedDebit(player);
        expect(compensationId).toBe(compensationTransactionId(debit.transactionId));

        const settled = await debitSettled(debit.transactionId);
        expect(settled.state).toBe('compensated');
        // No debit at the wallet: the rollback answers 34 four times, then status says "not applied".
        const compensation = (await h.store.get(compensationId))!;
        expect(compensation).toMatchObject({ state: 'failed', attempts: 4, lastWalletCode: Code.TransactionNotFound });
        expect(compensation.note).toMatch(/never applied/);
        const rollbacks = callsFor(h.sim, compensationId, 'rollback');
        expect(rollbacks).toHaveLength(4);
        expect(new Set(rollbacks.map((c) => c.rawBody)).size).toBe(1);
        expect(rollbacks[0]!.body).toMatchObject({ reference_transaction_id: debit.transactionId, round_closed: true, amount: debit.amount });
        const status = callsFor(h.sim, debit.transactionId, 'status');
        expect(status).toHaveLength(1);
        expect(status[0]!.body).toMatchObject({ action: 'debit', amount: debit.amount, round_id: debit.walletRoundId });
        expect(balance()).toBe(start);
      },
      20_000,
    );

    it('a debit applied at the wallet whose answer hung is rolled back: the balance ends where it started', async () => {
      const start = balance();
      h.sim.faults.applyThenDrop('debit', 1, { mode: 'hang' });
      const { debit, compensationId, outcome } = await h.refusedDebit(player);
      expect(outcome.kind).toBe('unknown');
      expect(h.sim.ledger.appliedCount(debit.transactionId)).toBe(1);

      expect((await debitSettled(debit.transactionId)).state).toBe('compensated');
      expect(await h.store.get(compensationId)).toMatchObject({ state: 'succeeded', attempts: 1, lastWalletCode: Code.Success });
      expect(h.sim.ledger.appliedCount(compensationId)).toBe(1);
      expect(balance()).toBe(start);
    });

    it('a debit whose connection was reset after it applied is rolled back, retrying the same rollback id', async () => {
      const start = balance();
      h.sim.faults.applyThenDrop('debit', 1, { mode: 'reset' });
      h.sim.faults.failNext('rollback', 2, Code.InternalServiceError);
      const { debit, compensationId } = await h.refusedDebit(player);

      expect((await debitSettled(debit.transactionId)).state).toBe('compensated');
      expect(await h.store.get(compensationId)).toMatchObject({ state: 'succeeded', attempts: 3, history: [12, 12, 1] });
      const rollbacks = h.sim.calls().filter((c) => c.operation === 'rollback' && c.body?.reference_transaction_id === debit.transactionId);
      expect(rollbacks.map((c) => c.transactionId)).toEqual([compensationId, compensationId, compensationId]);
      expect(balance()).toBe(start);
    });

    it('an engine refund of the same bet and the compensation never reach the wallet as two rollbacks', async () => {
      const start = balance();
      // The bet is claimed and its answer is lost (applied at the wallet) ...
      const { bet, lost } = await lostDebit();
      const debitId = bet.transactionId;

      // ... meanwhile the engine refunds that bet, and the refund goes through.
      const refundId = newId('rollback');
      await h.settleInline(player, 'rollback', bet, { id: refundId });
      expect(await h.store.get(refundId)).toMatchObject({ state: 'succeeded' });

      // The debit's compensation is linked to the refund instead of sending a second rollback.
      const next = afterInlineAttempt({ record: bet, outcome: lost, unit: 'ms', now: Date.now() });
      if (next.kind !== 'compensate') throw new Error('expected compensate');
      const started = await h.store.beginCompensation({
        debit: bet,
        error: next.error,
        ...next.progress,
        compensation: compensationFor(bet, Date.now()),
        leaseUntil: Date.now() + 10_000,
      });
      expect(started).toEqual({ kind: 'linked', compensationId: refundId });
      await h.duties.enqueueRetry({ ...bet, transactionId: refundId }, 0);

      expect((await debitSettled(debitId)).state).toBe('compensated');
      const rollbacks = h.sim.calls().filter((c) => c.operation === 'rollback' && c.body?.reference_transaction_id === debitId);
      expect(rollbacks.map((c) => c.transactionId)).toEqual([refundId]);
      expect(h.sim.ledger.appliedCount(compensationTransactionId(debitId))).toBe(0);
      expect(balance()).toBe(start);
    });

    it('a debit whose linked engine refund the wallet then refused for good gets its own compensation', async () => {
      const start = balance();
      // The bet is applied at the wallet and its answer is lost ...
      const { bet, lost } = await lostDebit();
      const debitId = bet.transactionId;

      // ... while the engine's refund of it is claimed and still out at the wallet: the debit's
      // compensation is linked to it.
      const refund = await h.claimOnly(player, 'rollback', bet);
      await linkCompensation(bet, lost, refund.transactionId);
      expect(h.sim.calls().filter((c) => c.transactionId === refund.transactionId)).toEqual([]);

      // The refund's own call comes back refused for good: the engine gets its 4xx, and nothing was reversed.
      h.sim.faults.failNext('rollback', 1, Code.Validation, { transactionId: refund.transactionId });
      const refused = afterInlineAttempt({ record: refund, outcome: await h.wallet.send('rollback', refund.walletBody), unit: 'ms', now: Date.now() });
      if (refused.kind !== 'settle') throw new Error('expected a refusal');
      expect(await h.store.settle(refund, refused.update)).toBe(true);
      expect(await h.store.get(refund.transactionId)).toMatchObject({ state: 'failed' });

      // The job then finds its refund refused: the debit's own compensation goes out, and the
      // refund itself went to the wallet once.
      expect(await debitSettled(debitId)).toMatchObject({ state: 'compensated', compensationId: compensationTransactionId(debitId) });
      expect(h.sim.ledger.appliedCount(compensationTransactionId(debitId))).toBe(1);
      expect(h.sim.ledger.transaction(debitId)).toMatchObject({ rolledBack: true });
      expect(h.sim.calls().filter((c) => c.transactionId === refund.transactionId)).toHaveLength(1);
      expect(balance()).toBe(start);
    });

    it('`end` between a linked refund\'s refusal for good and the hand-over waits: the stake comes back before the terminate', async () => {
      const own = await h.newPlayer();
      const start = h.sim.ledger.balanceOf(own.fields.player_id);
      const { bet, lost } = await lostDebit(own);
      const refundId = newId('rollback');
      h.sim.faults.failNext('rollback', 1, Code.Validation, { transactionId: refundId });

      // While the refund's call is out, the bet's own gateway concludes "compensate" and links it;
      // the engine's `end` arrives right after the refund's refusal is settled, before its gateway
      // hands the compensation over.
      const store = h.store as { settle: typeof h.store.settle };
      const realSettle = store.settle.bind(h.store);
      let endStatus: number | undefined;
      store.settle = async (record, update) => {
        if (record.transactionId !== refundId || endStatus !== undefined) return realSettle(record, update);
        await linkCompensation(bet, lost, refundId);
        const settled = await realSettle(record, update);
        endStatus = (await h.endSession(own)).status;
        return settled;
      };
      try {
        const refund = await fetch(`${h.url}/engine/v1/sessions/${own.session.sessionId}/refund`, {
          method: 'POST',
          headers: { authorization: 'Bearer worker-harness-engine-key', 'content-type': 'application/json' },
          body: JSON.stringify({ round_id: bet.roundId, transaction_id: refundId, bet_transaction_id: bet.transactionId, amount: 10 }),
        });
        expect({ status: refund.status, endStatus }).toEqual({ status: 422, endStatus: 202 });
      } finally {
        store.settle = realSettle;
      }

      // The bet held its token through the gap: its own compensation went out on the live token,
      // and the terminate only after it.
      expect(await debitSettled(bet.transactionId)).toMatchObject({ state: 'compensated', compensationId: compensationTransactionId(bet.transactionId) });
      expect(h.sim.ledger.balanceOf(own.fields.player_id)).toBe(start);
      await waitFor('the token terminated', async () => h.tokenCalls(own).includes('terminate'), 20_000);
      expect(h.tokenCalls(own)).toEqual(['authenticate', 'debit', 'rollback', 'rollback', 'terminate']);
    });

    it('a refund through another token of the player standing in for the compensation holds the bet\'s token too', async () => {
      const own = await h.newPlayer();
      const start = h.sim.ledger.balanceOf(own.fields.player_id);
      const { bet, lost } = await lostDebit(own);
      // The engine refunds the bet through a relaunch on a new token; the refund is out when the
      // bet's compensation links to it.
      const relaunched = await h.newToken(own);
      const refund = await h.claimOnly(relaunched, 'rollback', bet);
      await linkCompensation(bet, lost, refund.transactionId);

      // Nothing of the bet's token is pending but the bet itself: `end` of its session waits.
      expect((await h.endSession(own)).status).toBe(202);
      expect(h.tokenCalls(own)).not.toContain('terminate');

      // The refund goes through: the bet is compensated by it, and then the bet's token goes.
      const done = afterInlineAttempt({ record: refund, outcome: await h.wallet.send('rollback', refund.walletBody), unit: 'ms', now: Date.now() });
      if (done.kind !== 'settle') throw new Error('expected the refund settled');
      expect(await h.store.settle(refund, done.update)).toBe(true);
      expect(await h.store.get(bet.transactionId)).toMatchObject({ state: 'compensated', compensationId: refund.transactionId });
      await waitFor('the bet\'s token terminated', async () => h.tokenCalls(own).includes('terminate'), 20_000);
      expect(h.tokenCalls(own)).toEqual(['authenticate', 'debit', 'terminate']);
      expect(h.sim.ledger.balanceOf(own.fields.player_id)).toBe(start);
    });
  });
});
