import { Worker, type Job } from 'bullmq';
import { compensationFor, compensationRef, replaceFailedRollback } from '../../src/duties/compensation';
import { compensationTransactionId } from '../../src/duties/compensation-id';
import { ensureRetryJob, QUEUE_NAMES, retryJobId, type RetryJobData } from '../../src/duties/queues';
import { afterInlineAttempt } from '../../src/duties/settlement';
import { waitFor } from '../../src/lib/wait-for';
import { createLogger } from '../../src/observability/logger';
import { createMetrics } from '../../src/observability/metrics';
import { createRedis } from '../../src/store/redis';
import type { SettleUpdate } from '../../src/store/transactions';
import { BET_NEVER_APPLIED_NOTE } from '../../src/store/types';
import { Code } from '../../src/wallet/codes';
import { createRetryProcessor, type RetryProcessorDeps } from '../../workers/retry-processor';
import type { RunningWorker } from '../../workers/worker';
import { redisUrl } from '../support/prefix';
import { newId, startHarness, type Harness, type Player } from '../support/worker-harness';
import { PRIMARY_ONLY } from '../../src/store/durability';
import { UNCAPPED } from '../support/uncapped';

/**
 * A debit being compensated holds its own token (includes/debit-state.lua): paths that could leave
 * that hold in place for good, so that the token's terminate never goes.
 */
let h: Harness;
let worker: RunningWorker | undefined;

beforeAll(async () => {
  h = await startHarness({ label: 'tokenhold', env: { WALLET_TIMEOUT_MS: '400' } });
});
afterEach(async () => {
  h.sim.faults.clear();
  await worker?.close();
  worker = undefined;
});
afterAll(async () => {
  await h.close();
});

const keys = () => h.store.layout.keys(0);


/** After `end`, with a worker sweeping: what still holds the bet's token, and whether it was terminated. */
async function afterEnd(of: Player, betId: string) {
  worker = await h.startWorker();
  await h.endSession(of);
  await worker.sweepNow();
  let terminated = false;
  try {
    await waitFor('terminate', async () => h.tokenCalls(of).includes('terminate') || undefined, 6_000);
    terminated = true;
  } catch {
    terminated = false;
  }
  return {
    debit: (await h.store.get(betId))?.state,
    holding: await h.redis.smembers(keys().tokenPending(of.session.tokenRef)),
    terminated,
  };
}

it('a hold nothing can give back any more (left by a process of an earlier release) does not keep the token from its terminate', async () => {
  const own = await h.newPlayer();
  h.sim.faults.applyThenDrop('debit', 1, { mode: 'hang' });
  const { debit, compensationId } = await h.refusedDebit(own);
  expect(await h.redis.sismember(keys().tokenPending(own.session.tokenRef), debit.transactionId)).toBe(1);

  // The compensation goes through and is settled as the previous release settles it: the debit
  // becomes compensated, but its id stays in the token's pending set (that release's settle knew
  // nothing of the debit's hold), as does a member whose record is gone.
  const comp = (await h.store.get(compensationId))!;
  const sent = await h.wallet.send('rollback', comp.walletBody);
  if (sent.kind !== 'ok') throw new Error(`rollback: ${JSON.stringify(sent)}`);
  expect(await h.store.settle(comp, { state: 'succeeded', expect: ['pending'], attempts: 1, lastWalletCode: 1, history: [1], balance: sent.response.balance, sessionBalance: sent.response.balance, error: null, debitState: 'compensated' })).toBe(true);
  await h.redis.sadd(keys().tokenPending(own.session.tokenRef), debit.transactionId, 'b-removed-by-hand');

  expect(await afterEnd(own, debit.transactionId)).toEqual({ debit: 'compensated', holding: [], terminated: true });
});

it('a debit linked to an engine refund that already succeeded (its job still active, so none is added) is compensated in the same step and holds nothing', async () => {
  const own = await h.newPlayer();
  const { bet, lost } = await h.lostDebit(own);
  // The engine's refund of the bet: its inline try is answered 32, so a job retries it.
  const refundId = newId('rollback');
  h.sim.faults.failNext('rollback', 1, Code.UserOffline, { transactionId: refundId });
  expect((await h.settleInline(own, 'rollback', bet, { id: refundId })).next).toBe('retry');

  // The refund's job runs (the worker's real processor); right after it settled the refund
  // succeeded, while BullMQ still has the job active, the bet's gateway concludes "compensate":
  // the compensation links to the refund (round.rollback still names it) and its
  // ensureRetryJob finds the refund's job live, so adds none.
  let linked: unknown;
  let jobAdded: boolean | undefined;
  const racing = {
    ...h.store,
    async settle(record: Parameters<typeof h.store.settle>[0], update: SettleUpdate) {
      const done = await h.store.settle(record, update);
      if (done && record.transactionId === refundId && update.state === 'succeeded' && linked === undefined) {
        const next = afterInlineAttempt({ record: bet, outcome: lost, unit: 'ms', now: Date.now() });
        if (next.kind !== 'compensate') throw new Error('expected compensate');
        linked = await h.store.beginCompensation({ debit: bet, error: next.error, ...next.progress, compensation: compensationFor(bet, Date.now()), leaseUntil: Date.now() + 10_000 });
        jobAdded = await ensureRetryJob(h.duties.queues, compensationRef(bet, refundId), 0);
      }
      return done;
    },
  };
  const breaker = { allowsCalls: () => true, healthOkAt: () => Date.now(), gate: async () => ({ kind: 'go' }), refused: () => undefined, trialDone: async () => undefined, trialUnused: async () => undefined } as unknown as RetryProcessorDeps['breaker'];
  const processRetry = createRetryProcessor({
    store: racing, ensureRetryJob: (r) => ensureRetryJob(h.duties.queues, r, 0), shard: 0, wallet: h.wallet, breaker, cap: UNCAPPED, durability: PRIMARY_ONLY, rateLimit: async () => undefined,
    logger: createLogger({ level: 'silent', name: 'review' }), metrics: createMetrics({ defaultMetrics: false }), unit: 'ms',
    graceMs: 1000, heldRecheckMs: 1000, inFlightMs: 5000, inlineWindowMs: 5000, recheckIntervalMs: 1000, recheckWindowMs: 60_000, now: Date.now,
  });
  const connection = createRedis(redisUrl(), { forBullmq: true });
  const bull = new Worker<RetryJobData>(QUEUE_NAMES.retry, (job: Job<RetryJobData>, token?: string) => processRetry(job, token), { connection, prefix: h.duties.queues.layout.queuePrefix(0) });
  try {
    await waitFor('the refund job done', async () => (linked !== undefined && (await h.duties.queues.shards[0]!.retry.getJobState(retryJobId(refundId))) === 'unknown') || undefined, 10_000);
  } finally {
    await bull.close();
    connection.disconnect();
  }
  expect({ linked, jobAdded }).toEqual({ linked: { kind: 'linked', compensationId: refundId }, jobAdded: false });
  expect(await h.store.get(refundId)).toMatchObject({ state: 'succeeded' });
  // The stake is back (the refund applied); nothing is owed, yet:
  expect(await afterEnd(own, bet.transactionId)).toEqual({ debit: 'compensated', holding: [], terminated: true });
});

it.each([
  ['alone', false],
  ["racing the gateway's own hand-over and the refund's job", true],
])('a refused stand-in whose hand-over was lost with its process (and no job of the refund behind it) is handed over by the sweeper, %s', async (_label, racing) => {
  const own = await h.newPlayer();
  const start = h.sim.ledger.balanceOf(own.fields.player_id);
  const { bet, lost } = await h.lostDebit(own);
  // The engine's refund is out when the bet's process links its compensation to it, and that
  // process dies before it queues the refund's job.
  const refund = await h.claimOnly(own, 'rollback', bet);
  const next = afterInlineAttempt({ record: bet, outcome: lost, unit: 'ms', now: Date.now() });
  if (next.kind !== 'compensate') throw new Error('expected compensate');
  expect(await h.store.beginCompensation({ debit: bet, error: next.error, ...next.progress, compensation: compensationFor(bet, Date.now()), leaseUntil: Date.now() + 10_000 })).toEqual({ kind: 'linked', compensationId: refund.transactionId });

  // The refund is refused for good and settled; its process dies before the hand-over look.
  h.sim.faults.failNext('rollback', 1, Code.Validation, { transactionId: refund.transactionId });
  const refused = afterInlineAttempt({ record: refund, outcome: await h.wallet.send('rollback', refund.walletBody), unit: 'ms', now: Date.now() });
  if (refused.kind !== 'settle') throw new Error('expected a refusal');
  expect(await h.store.settle(refund, refused.update)).toBe(true);
  expect(await h.store.get(bet.transactionId)).toMatchObject({ state: 'compensating', compensationId: refund.transactionId });

  worker = await h.startWorker();
  const standIn = { store: h.store, enqueue: (ref: Parameters<typeof h.duties.enqueueRetry>[0]) => h.duties.enqueueRetry(ref, 0), now: Date.now, leaseMs: 5_000 };
  await Promise.all([worker.sweepNow(), ...(racing ? [replaceFailedRollback(standIn, refund), ensureRetryJob(h.duties.queues, refund, 0)] : [])]);
  const settled = await waitFor('the bet compensated by its own rollback', async () => {
    const record = await h.store.get(bet.transactionId);
    return record?.state === 'compensated' ? record : undefined;
  }, 20_000);
  const ownId = compensationTransactionId(bet.transactionId);
  expect(settled.compensationId).toBe(ownId);
  // One compensation, applied once: the wallet saw the refused refund and the bet's own rollback, each once.
  expect(h.sim.ledger.appliedCount(ownId)).toBe(1);
  const rollbacks = h.sim.calls().filter((c) => c.operation === 'rollback' && c.body?.reference_transaction_id === bet.transactionId).map((c) => c.transactionId);
  expect(rollbacks.sort()).toEqual([refund.transactionId, ownId].sort());
  expect(h.sim.ledger.transaction(bet.transactionId)).toMatchObject({ rolledBack: true });
  expect(h.sim.ledger.balanceOf(own.fields.player_id)).toBe(start);
  expect(await h.redis.zscore(keys().pendingIndex(), bet.transactionId)).toBeNull();
});

it('a compensating debit in the sweeper\'s list whose compensation is no refused stand-in is looked at again only after the grace, nothing else done', async () => {
  const own = await h.newPlayer();
  h.sim.faults.applyThenDrop('debit', 1, { mode: 'hang' });
  const { debit } = await h.refusedDebit(own);
  // Its own compensation keeps retrying meanwhile: the debit stays compensating through the sweep.
  h.sim.faults.failNext('rollback', 10, Code.InternalServiceError, { transactionId: compensationTransactionId(debit.transactionId) });
  await h.redis.zadd(keys().pendingIndex(), 0, debit.transactionId);
  worker = await h.startWorker();
  const swept = Date.now();
  await worker.sweepNow();
  expect(Number(await h.redis.zscore(keys().pendingIndex(), debit.transactionId))).toBeGreaterThan(swept);
  expect(await h.store.get(debit.transactionId)).toMatchObject({ state: 'compensating', compensationId: compensationTransactionId(debit.transactionId) });
});

it("a bet never applied, whose compensation an engine refund through another token of the player stood in for, is watched on its own token: the refund's token is terminated, the bet's waits for the watch", async () => {
  const own = await h.newPlayer();
  const other = await h.newToken(own);
  // The bet's call is lost before the wallet applied it: its outcome unknown, its gateway compensates.
  const bet = await h.claimDebit(own);
  h.sim.faults.reset('debit', 1);
  const lost = await h.wallet.send('debit', bet.walletBody);
  const next = afterInlineAttempt({ record: bet, outcome: lost, unit: 'ms', now: Date.now() });
  if (next.kind !== 'compensate') throw new Error(`expected compensate, got ${next.kind}`);
  // The engine's refund of the bet, through the other token's session, is out: it stands in.
  const refund = await h.claimOnly(other, 'rollback', bet);
  expect(await h.store.beginCompensation({ debit: bet, error: next.error, ...next.progress, compensation: compensationFor(bet, Date.now()), leaseUntil: Date.now() + 10_000 })).toEqual({ kind: 'linked', compensationId: refund.transactionId });
  await ensureRetryJob(h.duties.queues, refund, 0);

  // The worker's tries meet no bet at the wallet; status finds it never applied: nothing reversed, the bet watched.
  worker = await h.startWorker();
  expect(await h.inState(refund.transactionId, 'succeeded')).toMatchObject({ note: BET_NEVER_APPLIED_NOTE });
  expect(await h.store.get(bet.transactionId)).toMatchObject({ state: 'compensated', recheckUntil: expect.any(Number) });

  await h.endSession(other);
  await waitFor("the refund's token terminated", async () => h.tokenCalls(other).includes('terminate') || undefined, 10_000);
  await h.endSession(own);
  const now = Date.now();
  expect(await h.sessions.takeTerminate(own.session.tokenRef, { now, leaseUntil: now + 1000, checkAt: now + 2000, sessionsCheckAt: now + 60_000 })).toEqual({ kind: 'wait', for: 'work' });
  expect(h.tokenCalls(own)).not.toContain('terminate');
});
