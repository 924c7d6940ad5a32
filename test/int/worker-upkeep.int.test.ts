import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import type { Job } from 'bullmq';
import { BREAKER_POLICY } from '../../src/duties/breaker-policy';
import { compensationTransactionId } from '../../src/duties/compensation-id';
import type { RetryJobData, TerminateJobData } from '../../src/duties/queues';
import { createWalletBreaker } from '../../src/duties/wallet-breaker';
import { createLogger } from '../../src/observability/logger';
import { createMetrics } from '../../src/observability/metrics';
import { createBreakerStore } from '../../src/store/breaker';
import { keysFor } from '../../src/store/keys';
import { createTransactionStore } from '../../src/store/transactions';
import { RetryLater } from '../../workers/backoff';
import { createRetryProcessor } from '../../workers/retry-processor';
import { createTerminateProcessor } from '../../workers/terminate-processor';
import { ensureRetryJob, retryJobId } from '../../src/duties/queues';
import { redrive } from '../../src/duties/redrive';
import { Code } from '../../src/wallet/codes';
import { encodeRequest } from '../../src/wallet/protocol';
import { DEAD_CHECK_BATCH } from '../../workers/upkeep';
import type { RunningWorker } from '../../workers/worker';
import { callsFor, startHarness, newId, type Harness, type Player } from '../support/worker-harness';
import { waitFor } from '../../src/lib/wait-for';
import { DEFAULT_TOKEN_SESSION_CAP } from '../../src/config/env';
import { exactDecimal } from '../../src/lib/money';
import { PRIMARY_ONLY } from '../../src/store/durability';
import { UNCAPPED } from '../support/uncapped';

let h: Harness;
let worker: RunningWorker;
let player: Player;

beforeAll(async () => {
  h = await startHarness({ label: 'wupkeep', env: { WALLET_TIMEOUT_MS: '400' } });
  worker = await h.startWorker();
  player = await h.newPlayer();
});

/** A worker one test starts beside the file's own; closed after that test. */
let extraWorker: RunningWorker | undefined;

afterEach(async () => {
  h.sim.faults.clear();
  await extraWorker?.close();
  extraWorker = undefined;
});

afterAll(async () => {
  await h.close();
});

const balance = (p: Player = player) => h.sim.ledger.balanceOf(p.fields.player_id)!;

describe('sweeper', () => {
  it('re-queues a pending credit that has no job behind it', async () => {
    const bet = await h.bet(player);
    // The gateway died between claim and its first attempt: no job, lease over.
    const claimed = await h.claimOnly(player, 'credit', bet, { leaseMs: -1 });
    await worker.sweepNow();
    // The lost inline call may have reached the wallet: it counts as one try of unknown outcome.
    expect(await h.inState(claimed.transactionId, 'succeeded')).toMatchObject({ attempts: 2, history: ['unknown', 1], lastWalletCode: 1 });
    expect(h.sim.ledger.appliedCount(claimed.transactionId)).toBe(1);
  });

  it('re-queues a win queued unsent (the wallet was down) without counting a try for it', async () => {
    const bet = await h.bet(player);
    // Claimed, then queued instead of sent (the breaker was open), and its job lost: what the
    // gateway's holdBack leaves, with the lease over.
    const claimed = await h.claimOnly(player, 'credit', bet, { leaseMs: -1 });
    expect(await h.store.settle(claimed, { state: 'pending', expect: ['pending'], queued: true })).toBe(true);
    await worker.sweepNow();
    // Nothing reached the wallet before: the one try is the worker's (contract 5.3), and the spec's budget is whole.
    expect(await h.inState(claimed.transactionId, 'succeeded')).toMatchObject({ attempts: 1, history: [1] });
    expect(callsFor(h.sim, claimed.transactionId, 'credit')).toHaveLength(1);
    expect(h.sim.ledger.appliedCount(claimed.transactionId)).toBe(1);
  });

  /** A debit claimed by a gateway that died before it settled anything (its lease is over). */
  async function debitInDoubt(amount: string): Promise<{ id: string; walletBody: string }> {
    const id = `b-${randomUUID().slice(0, 30)}`;
    const roundId = randomUUID();
    const walletBody = encodeRequest('debit', { ...player.fields, amount, round_id: roundId, transaction_id: id, round_closed: false });
    await h.store.claim({
      record: {
        transactionId: id, kind: 'debit', sessionId: player.session.sessionId, tokenRef: player.session.tokenRef, playerId: player.fields.player_id, siteId: player.fields.site_id,
        roundId, walletRoundId: roundId, amount, currency: 'EUR', roundClosed: false, referenceTransactionId: null,
        bodyHash: `hash-${id}`, walletOperation: 'debit', walletBody, isCompensation: false, createdAt: Date.now(),
      },
      exactAmount: exactDecimal(amount),
      leaseUntil: Date.now() - 1,
    });
    return { id, walletBody };
  }

  it('asks the wallet about a debit in doubt before anything else: applied → succeeded, never rolled back (contract 5.5)', async () => {
    const start = balance();
    const { id, walletBody } = await debitInDoubt('7.50');
    // The call reached the wallet, then the gateway process died (or Redis lost its settle).
    expect((await h.wallet.send('debit', walletBody)).kind).toBe('ok');
    expect(balance()).not.toBe(start);

    await worker.sweepNow();
    const debit = await h.inState(id, 'succeeded');
    expect(debit).toMatchObject({ attempts: 1, lastWalletCode: 1, compensationId: null });
    expect(callsFor(h.sim, id, 'status')).toHaveLength(1);
    expect(h.sim.calls().filter((c) => c.operation === 'rollback' && c.body?.reference_transaction_id === id)).toHaveLength(0);
    expect(balance()).toBe((Number(start) - 7.5).toFixed(2));
  });

  it('compensates a debit in doubt the wallet says it never applied', async () => {
    const start = balance();
    const { id } = await debitInDoubt('6.00');
    await worker.sweepNow();
    const debit = await h.inState(id, 'compensated');
    expect(debit).toMatchObject({ attempts: 1, history: ['unknown'] });
    expect(callsFor(h.sim, id, 'status').length).toBeGreaterThanOrEqual(1);
    expect(balance()).toBe(start);
  });

  /** A credit whose inline attempt got code 12, with its retry job taken away. */
  async function pendingCreditWithoutJob() {
    const { id } = await h.winAfter(player, (creditId) => h.sim.faults.failNext('credit', 1, Code.InternalServiceError, { transactionId: creditId }));
    await h.duties.queues.shards[0]!.retry.remove(retryJobId(id));
    return { id, record: (await h.store.get(id))! };
  }

  it('finishes an attempt a crashed worker left half-recorded, keeping the spec delay', async () => {
    // Simulate the crash: the job vanished after its second try was recorded but before it settled.
    const { id, record } = await pendingCreditWithoutJob();
    await h.store.settle(record, { state: 'pending', expect: ['pending'], attempts: 2, history: [12, 'unknown'], nextCheckAt: 0 });
    const crashedAt = Date.now();

    await worker.sweepNow();
    expect(await h.inState(id, 'succeeded')).toMatchObject({ attempts: 3, history: [12, 'unknown', 1] });
    const last = callsFor(h.sim, id).at(-1)!;
    expect(last.at - crashedAt).toBeGreaterThanOrEqual(477 - 5);
  });

  it('a second run of a job does not send while another run of it has an attempt in flight', async () => {
    // Another run (of a stalled job picked up again) recorded its attempt and is at the wallet.
    const { id, record } = await pendingCreditWithoutJob();
    const inFlightUntil = Date.now() + 1500;
    await h.store.settle(record, { state: 'pending', expect: ['pending'], attempts: 2, history: [12, 'unknown'], inFlightUntil, nextCheckAt: 0 });
    const callsBefore = callsFor(h.sim, id).length;

    await worker.sweepNow();
    await waitFor('the second run held back', async () => (await h.duties.queues.shards[0]!.retry.getJobState(retryJobId(id))) === 'delayed');
    expect(callsFor(h.sim, id)).toHaveLength(callsBefore);
    // The first run settles its attempt; the held run then finds nothing to do.
    const inFlight = (await h.store.get(id))!;
    expect(await h.store.settle(inFlight, { state: 'succeeded', expect: ['pending'], attempts: 2, history: [12, 1], inFlightUntil: null })).toBe(true);
    await waitFor('the held run done', async () => (await h.duties.queues.shards[0]!.retry.getJobState(retryJobId(id))) === 'unknown');
    expect(callsFor(h.sim, id)).toHaveLength(callsBefore);
    expect(await h.store.get(id)).toMatchObject({ state: 'succeeded', attempts: 2 });
  });

  it('starts one attempt per record even when two runs read it at once', async () => {
    const { record } = await pendingCreditWithoutJob();
    const start = { state: 'pending' as const, expect: ['pending' as const], expectAttempts: record.attempts, attempts: record.attempts + 1, history: [...record.history, 'unknown' as const] };
    expect(await h.store.settle(record, start)).toBe(true);
    expect(await h.store.settle(record, start)).toBe(false);
  });

  it('a run that stalled past its lock cannot overwrite the attempt of the run that replaced it', async () => {
    const { id, record } = await pendingCreditWithoutJob();
    const silent = createLogger({ level: 'silent', name: 'stale-run-test', destination: new Writable({ write: (_c, _e, cb) => cb() }) });
    // While this run's attempt is out, it stalls: its job is picked up again, and that run starts the next attempt.
    const stalled = {
      ...h.wallet,
      send: async (...args: Parameters<typeof h.wallet.send>) => {
        const outcome = await h.wallet.send(...args);
        const now = (await h.store.get(id))!;
        expect(await h.store.settle(now, { state: 'pending', expect: ['pending'], expectAttempts: now.attempts, attempts: now.attempts + 1, history: [...now.history, 'unknown'], inFlightUntil: Date.now() + 60_000 })).toBe(true);
        return outcome;
      },
    };
    const processRetry = createRetryProcessor({
      store: h.store, ensureRetryJob: (r) => ensureRetryJob(h.duties.queues, r, 0), shard: 0, wallet: stalled, breaker: { allowsCalls: () => true, healthOkAt: () => Date.now(), gate: async () => ({ kind: 'go' }), refused: () => undefined, trialDone: async () => undefined, trialUnused: async () => undefined } as never,
      cap: UNCAPPED, durability: PRIMARY_ONLY, rateLimit: async () => undefined, logger: silent, metrics: createMetrics(), unit: 'ms',
      graceMs: 1000, heldRecheckMs: 1000, inFlightMs: 5000, inlineWindowMs: 5000, recheckIntervalMs: 1000, recheckWindowMs: 60_000,
      now: () => Date.now() + 10_000,
    });
    expect(await processRetry({ data: { transactionId: id } } as Job<RetryJobData>)).toBe('settled-elsewhere');
    // The newer run's start stands: its attempt is out, and the stale run's success did not end the record.
    expect(await h.store.get(id)).toMatchObject({ state: 'pending', attempts: record.attempts + 2, history: [...record.history, 'unknown', 'unknown'] });
  });

  it('a half-open breaker\'s trial is a wallet status of the record: a failed trial spends none of its budget', async () => {
    const { id, record } = await pendingCreditWithoutJob();
    const sendsBefore = callsFor(h.sim, id, 'credit').length;
    const breakerKeys = keysFor(`${h.prefix}-trial-retry`);
    const breakerStore = createBreakerStore(h.redis, breakerKeys, BREAKER_POLICY);
    const silent = createLogger({ level: 'silent', name: 'trial-test', destination: new Writable({ write: (_c, _e, cb) => cb() }) });
    const breaker = createWalletBreaker({ store: breakerStore, logger: silent, observeCalls: false });
    try {
      await breakerStore.report('open', Date.now() - BREAKER_POLICY.firstProbeMs, 'test');
      breaker.start({ healthCheck: async () => ({ healthy: true, detail: '' }) });
      await waitFor('the breaker half-open', () => breaker.state() === 'half_open');
      const processRetry = createRetryProcessor({
        store: h.store, ensureRetryJob: (r) => ensureRetryJob(h.duties.queues, r, 0), shard: 0, wallet: h.wallet, breaker, cap: UNCAPPED, durability: PRIMARY_ONLY, rateLimit: async () => undefined, logger: silent, metrics: createMetrics(), unit: 'ms',
        graceMs: 1000, heldRecheckMs: 1000, inFlightMs: 5000, inlineWindowMs: 5000, recheckIntervalMs: 1000, recheckWindowMs: 60_000,
        // Past the spec's delay for the recorded failure, so the run goes to the breaker's gate at once.
        now: () => Date.now() + 10_000,
      });
      // The health check passes but money calls still fail: the trial fails.
      h.sim.faults.failNext('status', 1, Code.InternalServiceError, { transactionId: id });
      await expect(processRetry({ data: { transactionId: id } } as Job<RetryJobData>)).rejects.toBeInstanceOf(RetryLater);
      expect(await h.redis.hmget(breakerKeys.breaker(), 'trials', 'trial_fail')).toEqual(['0', '1']);
      // The trial passes: still no send of the credit until the breaker closes.
      await expect(processRetry({ data: { transactionId: id } } as Job<RetryJobData>)).rejects.toBeInstanceOf(RetryLater);
      expect(await h.redis.hmget(breakerKeys.breaker(), 'trials', 'trial_ok')).toEqual(['0', '1']);
      expect(callsFor(h.sim, id, 'status')).toHaveLength(2);
      expect(callsFor(h.sim, id, 'credit')).toHaveLength(sendsBefore);
      expect(await h.store.get(id)).toMatchObject({ state: 'pending', attempts: record.attempts, history: record.history });
    } finally {
      await breaker.close();
      await h.redis.del(breakerKeys.breaker());
    }
  });
});

describe('redrive', () => {
  it('drives a dead credit again with a fresh budget, past the failed job of the same id', async () => {
    const { id } = await h.winAfter(player, (creditId) => h.sim.faults.failNext('credit', 4, Code.BetTransactionNotFoundInRound, { transactionId: creditId }));
    await h.inState(id, 'dead');
    // The record is dead before BullMQ has moved the job from active to failed.
    await waitFor(`${id} job failed`, async () => (await h.duties.queues.shards[0]!.retry.getJobState(retryJobId(id))) === 'failed', 5000);

    expect(await redrive({ store: h.store, queues: h.duties.queues }, id)).toEqual({ kind: 'redriven', transactionId: id });
    const record = await h.inState(id, 'succeeded');
    expect(record).toMatchObject({ attempts: 5, history: [Code.Success], lastWalletCode: Code.Success });
    expect((await h.store.listDead(0, 1000)).ids).not.toContain(id);
    expect(h.sim.ledger.appliedCount(id)).toBe(1);
    expect(await redrive({ store: h.store, queues: h.duties.queues }, id)).toEqual({ kind: 'not_dead', transactionId: id, state: 'succeeded' });
    expect(await redrive({ store: h.store, queues: h.duties.queues }, 'no-such-id')).toEqual({ kind: 'not_found' });
  });

  it('a compensation answered 34 while status says the debit applied watches the debit; its re-check rolls it back with a second id', async () => {
    const start = balance();
    h.sim.faults.applyThenDrop('debit', 1, { mode: 'hang' });
    h.sim.faults.failNext('rollback', 4, Code.TransactionNotFound);
    const { debit, compensationId } = await h.refusedDebit(player);

    const first = await h.inState(compensationId, 'failed');
    expect(first).toMatchObject({ attempts: 4, lastWalletCode: Code.TransactionNotFound });
    expect(first.note).toMatch(/the debit is watched \(status: applied\)/);
    expect(await h.store.get(debit.transactionId)).toMatchObject({ state: 'compensated' });
    expect(callsFor(h.sim, debit.transactionId, 'status')).toHaveLength(1);

    // Its re-check made due now (the file's worker asks every DEAD_CHECK_INTERVAL_MS).
    await h.redis.zadd(keysFor(h.prefix).recheckIndex(), 0, debit.transactionId);
    await worker.deadCheckNow();
    const late = compensationTransactionId(debit.transactionId, 1);
    await h.inState(late, 'succeeded');
    await h.inState(debit.transactionId, 'compensated');
    expect(balance()).toBe(start);
    // The redrive of a debit that is not dead changes nothing.
    expect(await redrive({ store: h.store, queues: h.duties.queues }, debit.transactionId)).toMatchObject({ kind: 'not_dead' });
  });
});

describe('dead-check', () => {
  it('a dead credit the wallet applied after all becomes succeeded; one it never applied stays dead', async () => {
    const bet1 = await h.bet(player);
    const bet2 = await h.bet(player);
    const applied = newId('credit');
    const never = newId('credit');
    h.sim.faults.failNext('credit', 4, Code.TransactionNotFound, { transactionId: applied });
    h.sim.faults.failNext('credit', 4, Code.TransactionNotFound, { transactionId: never });
    await h.settleInline(player, 'credit', bet1, { id: applied });
    await h.settleInline(player, 'credit', bet2, { id: never });
    const record = await h.inState(applied, 'dead');
    await h.inState(never, 'dead');
    // The wallet takes the very same request late (e.g. an answer lost on the way back).
    expect((await h.wallet.send('credit', record.walletBody)).kind).toBe('ok');

    expect(await worker.deadCheckNow()).toBe(1);
    expect(await h.store.get(applied)).toMatchObject({ state: 'succeeded', note: expect.stringMatching(/status/) });
    expect(await h.store.get(never)).toMatchObject({ state: 'dead' });
    const listed = (await h.store.listDead(0, 1000)).ids;
    expect(listed).not.toContain(applied);
    expect(listed).toContain(never);
    expect(callsFor(h.sim, never, 'status')[0]?.body).toMatchObject({ action: 'credit', transaction_id: never, amount: '25.00' });
  });

  it('leaves dead records older than the window alone', async () => {
    const { id } = await h.winAfter(player, (creditId) => h.sim.faults.failNext('credit', 4, Code.TransactionNotFound, { transactionId: creditId }));
    await h.inState(id, 'dead');
    const old = (extraWorker = await h.startWorker({ DEAD_CHECK_WINDOW_MS: '1' }));
    await new Promise((r) => setTimeout(r, 5));
    const before = callsFor(h.sim, id, 'status').length;
    await old.deadCheckNow();
    expect(callsFor(h.sim, id, 'status')).toHaveLength(before);
  });
});

describe('sessions', () => {
  it('a terminate takes no trial of a half-open breaker: it waits, and the slots stay for retries', async () => {
    const p = await h.newPlayer();
    const now = Date.now();
    expect(await h.sessions.end(p.session, { now, leaseUntil: now + 1000, checkAt: now + 2000, sessionsCheckAt: now + 60_000 })).toMatchObject({ kind: 'terminate' });

    const breakerKeys = keysFor(`${h.prefix}-trial`);
    const store = createBreakerStore(h.redis, breakerKeys, BREAKER_POLICY);
    const silent = createLogger({ level: 'silent', name: 'trial-test', destination: new Writable({ write: (_c, _e, cb) => cb() }) });
    const breaker = createWalletBreaker({ store, logger: silent, observeCalls: false });
    try {
      await store.report('open', Date.now() - BREAKER_POLICY.firstProbeMs, 'test');
      breaker.start({ healthCheck: async () => ({ healthy: true, detail: '' }) });
      await waitFor('the breaker half-open', () => breaker.state() === 'half_open');
      const processTerminate = createTerminateProcessor({
        sessions: h.sessions, wallet: h.wallet, breaker, durability: PRIMARY_ONLY, shardOfToken: () => 0, logger: silent, providerId: p.fields.provider_id, unit: 'ms', recheckMs: 1000, leaseMs: 5000, graceMs: 1000,
        windowMs: 60_000, retentionSeconds: 60, now: Date.now,
      });
      await expect(processTerminate({ data: { tokenRef: p.session.tokenRef } } as Job<TerminateJobData>)).rejects.toThrow(RetryLater);
      expect(await h.redis.hget(breakerKeys.breaker(), 'trials')).toBe('0');
      expect(h.sim.calls().filter((c) => c.operation === 'terminate' && c.body?.token === p.fields.token)).toHaveLength(0);
    } finally {
      await breaker.close();
      await h.redis.del(breakerKeys.breaker());
    }
  });

  it('a win retried across an end is credited, and terminate goes out after it', async () => {
    const p = await h.newPlayer();
    const start = balance(p);
    const bet = await h.bet(p, '10.00');
    const id = newId('credit');
    h.sim.faults.failNext('credit', 3, Code.InternalServiceError, { transactionId: id });
    await h.settleInline(p, 'credit', bet, { id, amount: '30.00' });
    const now = Date.now();
    expect(await h.sessions.end(p.session, { now, leaseUntil: now + 1000, checkAt: now + 2000, sessionsCheckAt: now + 60_000 })).toMatchObject({ kind: 'pending' });
    await h.duties.enqueueTerminate(p.session.tokenRef);
    await h.duties.enqueueTerminate(p.session.tokenRef);

    await waitFor('session ended', async () => (await h.sessions.get(p.session.sessionId))?.state === 'ended');
    expect(await h.store.get(id)).toMatchObject({ state: 'succeeded', attempts: 4 });
    const calls = h.sim.calls();
    const credited = calls.find((c) => c.transactionId === id && c.code === Code.Success)!;
    const terminates = calls.filter((c) => c.operation === 'terminate' && c.body?.token === p.fields.token);
    expect(terminates).toHaveLength(1);
    expect(terminates[0]!.seq).toBeGreaterThan(credited.seq);
    expect(terminates[0]!.code).toBe(Code.Success);
    expect(balance(p)).toBe((Number(start) + 20).toFixed(2));
  });

  it('a player relaunched during retries plays on; the retry keeps the original request', async () => {
    const { id } = await h.winAfter(player, (creditId) => h.sim.faults.failNext('credit', 3, Code.UserOffline, { transactionId: creditId }));
    const original = (await h.store.get(id))!.walletBody;

    // A new launch for the same player: a new token and session, and play goes on in it.
    const token = randomUUID();
    const relaunched: Player = { fields: { ...player.fields, token }, session: player.session };
    expect((await h.wallet.call('authenticate', relaunched.fields)).kind).toBe('ok');
    relaunched.session = (await h.sessions.create(
      { token, playerId: player.fields.player_id, siteId: player.fields.site_id, currency: 'EUR', gameId: 'slot-1', balance: balance() },
      Date.now(), DEFAULT_TOKEN_SESSION_CAP,
    )).session!;
    const bet2 = await h.bet(relaunched);
    const win2 = await h.settleInline(relaunched, 'credit', bet2);
    expect(win2.next).toBe('settle');

    await h.inState(id, 'succeeded');
    const sent = callsFor(h.sim, id, 'credit');
    expect(sent).toHaveLength(4);
    expect(sent.every((c) => c.rawBody === original && c.body?.token === player.fields.token)).toBe(true);
    expect(h.sim.ledger.appliedCount(id)).toBe(1);
    expect(h.sim.ledger.appliedCount(win2.id)).toBe(1);
  });
});

describe('job ids', () => {
  it('accepts transaction ids with ":" and integer-looking ids', async () => {
    for (const id of ['a:b:c', '12345']) {
      expect(retryJobId(id)).not.toContain(':');
      await ensureRetryJob(h.duties.queues, { transactionId: id, playerId: 'p', siteId: 's' }, 60_000);
      expect(await h.duties.queues.shards[0]!.retry.getJobState(retryJobId(id))).toBe('delayed');
      await h.duties.queues.shards[0]!.retry.remove(retryJobId(id));
    }
  });
});

describe('dead-check behind a backlog or a burst', () => {
  /**
   * DEAD_CHECK_BATCH bets made dead through `store` (its clock says when they died), as bets whose
   * compensation died leave them; their ids, taken out of the dead index again by `forget`.
   */
  async function deadBets(store: Pick<typeof h.store, 'settle'>): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < DEAD_CHECK_BATCH; i += 100) {
      ids.push(...(await Promise.all(Array.from({ length: 100 }, async () => {
        const claimed = await h.claimDebit(player, { leaseMs: 3_600_000 });
        expect(await store.settle(claimed, { state: 'dead', expect: ['pending'], note: 'rollback refused' })).toBe(true);
        return claimed.transactionId;
      }))));
    }
    return ids;
  }
  const forget = (ids: string[]) => h.redis.zrem(h.store.layout.keys(0).deadIndex(), ...ids);

  /** Today a win dies (34 four times), then the wallet takes the very same request late. */
  async function winAppliedLate(): Promise<string> {
    const { id } = await h.winAfter(player, (creditId) => h.sim.faults.failNext('credit', 4, Code.TransactionNotFound, { transactionId: creditId }));
    const dead = await h.inState(id, 'dead');
    expect((await h.wallet.send('credit', dead.walletBody)).kind).toBe('ok');
    return id;
  }

  it('still asks about a record that died today when more than a batch of records older than the window wait for an operator', async () => {
    // They went dead two days ago, past the window, and no operator acted on them yet.
    const twoDaysAgo = Date.now() - 2 * 24 * 3600 * 1000;
    const stale = await deadBets(createTransactionStore(h.redis, h.store.layout, 3600, () => twoDaysAgo));
    try {
      const id = await winAppliedLate();
      expect(await worker.deadCheckNow()).toBe(1);
      expect(await h.store.get(id)).toMatchObject({ state: 'succeeded' });
      expect(stale.some((old) => callsFor(h.sim, old, 'status').length > 0)).toBe(false);
    } finally {
      await forget(stale);
    }
  });

  it('goes on after a full batch: a burst of deaths within the window does not hold every place in it', async () => {
    // An outage leaves more than a batch dead within minutes.
    const burst = await deadBets(h.store);
    try {
      const id = await winAppliedLate();
      // The first run reads the burst's batch; the next goes on after it and finds the win.
      expect(await worker.deadCheckNow()).toBe(0);
      expect(await worker.deadCheckNow()).toBe(1);
      expect(await h.store.get(id)).toMatchObject({ state: 'succeeded' });
    } finally {
      await forget(burst);
    }
  });
});
