import { Writable } from 'node:stream';
import type Redis from 'ioredis';
import { BREAKER_POLICY } from '../../src/duties/breaker-policy';
import { createWalletBreaker, type WalletBreaker } from '../../src/duties/wallet-breaker';
import { waitFor } from '../../src/lib/wait-for';
import { createLogger } from '../../src/observability/logger';
import { createBreakerStore, type BreakerStore } from '../../src/store/breaker';
import { keysFor } from '../../src/store/keys';
import { closeRedis, createRedis } from '../../src/store/redis';
import { Code } from '../../src/wallet/codes';
import type { WalletCallEvent } from '../../src/wallet/protocol';
import { deletePrefix, redisUrl, testPrefix } from '../support/prefix';

/** The wallet circuit breaker's shared state (breaker-1.lua) and two processes' views of it, on a real Redis. */
let redis: Redis;
let prefix: string;
let store: BreakerStore;
const breakers: WalletBreaker[] = [];
const silent = createLogger({ level: 'silent', name: 'breaker-test', destination: new Writable({ write: (_c, _e, cb) => cb() }) });

beforeEach(() => {
  redis = createRedis(redisUrl());
  prefix = testPrefix('breaker');
  store = createBreakerStore(redis, keysFor(prefix), BREAKER_POLICY);
});

afterEach(async () => {
  await Promise.all(breakers.splice(0).map((b) => b.close()));
  await deletePrefix(prefix);
  await closeRedis(redis);
});

describe('the shared breaker state', () => {
  it('opens, probes on schedule, lets five trials through, and closes when three pass', async () => {
    const t0 = 1_000_000;
    expect(await store.report('open', t0, 'test')).toMatchObject({ state: 'open', changed: true, probeAt: t0 + 5000, openedAt: t0 });
    // a second opening while open changes nothing
    expect(await store.report('open', t0 + 1, 'again')).toMatchObject({ state: 'open', changed: false, probeAt: t0 + 5000 });
    // a passing health check before the probe is due does not half-open it
    expect(await store.report('health_ok', t0 + 4999)).toMatchObject({ state: 'open', changed: false });
    expect(await store.report('trial', t0 + 4999)).toMatchObject({ trial: 'wait' });
    expect(await store.report('health_ok', t0 + 5000)).toMatchObject({ state: 'half_open', changed: true, openedAt: t0 });
    const trials = [];
    for (let i = 0; i < 6; i += 1) trials.push((await store.report('trial', t0 + 5001)).trial);
    expect(trials).toEqual(['trial', 'trial', 'trial', 'trial', 'trial', 'wait']);
    await store.report('trial_ok', t0 + 5002);
    await store.report('trial_ok', t0 + 5003);
    expect(await store.report('trial_ok', t0 + 5004)).toMatchObject({ state: 'closed', changed: true, openedAt: null, probeAt: null });
    expect(await store.report('trial', t0 + 5005)).toMatchObject({ trial: 'go' });
    // the last passed health check outlives the close: retries of failures before it may go
    expect(await store.read()).toEqual({ state: 'closed', probeAt: null, openedAt: null, healthOkAt: t0 + 5000 });
  });

  it('failed trials of five transactions and no passed one open it again with a longer wait; failed health checks open a closed one', async () => {
    const t0 = 2_000_000;
    await store.report('open', t0, 'test');
    await store.report('health_ok', t0 + 5000);
    // one transaction may fail again and again for reasons of its own
    for (let i = 0; i < 5; i += 1) expect(await store.report('trial_fail', t0 + 5050 + i, 'failed', 'tx-a')).toMatchObject({ state: 'half_open' });
    for (const tx of ['tx-b', 'tx-c', 'tx-d']) expect(await store.report('trial_fail', t0 + 5080, 'failed', tx)).toMatchObject({ state: 'half_open' });
    expect(await store.report('trial_fail', t0 + 5100, 'failed', 'tx-e')).toMatchObject({ state: 'open', probeAt: t0 + 5100 + 10_000, openedAt: t0 });
    await redis.del(keysFor(prefix).breaker());
    expect(await store.report('health_fail', t0)).toMatchObject({ state: 'closed' });
    expect(await store.report('health_fail', t0 + 5000)).toMatchObject({ state: 'closed' });
    expect(await store.report('health_fail', t0 + 10_000)).toMatchObject({ state: 'open', changed: true });
  });

  it('failed health checks asked close together (retries waiting for a verdict) count once per second toward opening', async () => {
    const t0 = 8_000_000;
    const gap = BREAKER_POLICY.suspectHealthIntervalMs;
    for (const at of [t0, t0 + 100, t0 + 200, t0 + 400, t0 + gap - 1]) expect(await store.report('health_fail', at)).toMatchObject({ state: 'closed' });
    expect(await store.report('health_fail', t0 + gap)).toMatchObject({ state: 'closed' });
    // a pass in between starts the count again
    await store.report('health_ok', t0 + gap + 10);
    expect(await store.report('health_fail', t0 + gap + 20)).toMatchObject({ state: 'closed' });
    expect(await store.report('health_fail', t0 + 2 * gap + 20)).toMatchObject({ state: 'closed' });
    expect(await store.report('health_fail', t0 + 3 * gap + 20)).toMatchObject({ state: 'open', changed: true });
  });

  it('never stays half-open: leaked trial slots are given out again, and passing health with no retry to try closes it', async () => {
    const t0 = 3_000_000;
    await store.report('open', t0, 'test');
    await store.report('health_ok', t0 + 5000);
    for (let i = 0; i < BREAKER_POLICY.trials; i += 1) await store.report('trial', t0 + 5001);
    // their holders died, or found nothing to send: no report within the trial window
    expect(await store.report('trial', t0 + 5002)).toMatchObject({ trial: 'wait' });
    expect(await store.report('trial', t0 + 5001 + BREAKER_POLICY.trialWindowMs)).toMatchObject({ state: 'half_open', trial: 'trial' });
    // no trial failed for a whole window, and the health check passes: closed
    expect(await store.report('health_ok', t0 + 5001 + 2 * BREAKER_POLICY.trialWindowMs)).toMatchObject({ state: 'closed', changed: true });
  });

  it('holders that send nothing cannot hold it half-open: passing health closes it a trial window after it half-opened', async () => {
    const t0 = 4_000_000;
    const window = BREAKER_POLICY.trialWindowMs;
    await store.report('open', t0, 'test');
    await store.report('health_ok', t0 + 5000);
    // Work that takes a slot every half second and never reports (the soak's waiting terminates
    // did): the slots are given out again each window, and the health checks pass.
    let state = 'half_open';
    for (let t = t0 + 5000; t <= t0 + 5000 + 3 * window && state === 'half_open'; t += 500) {
      await store.report('trial', t);
      if ((t - t0) % 5000 === 0) state = (await store.report('health_ok', t)).state;
      if (state !== 'half_open') expect(t).toBe(t0 + 5000 + window);
    }
    expect(state).toBe('closed');
  });

  it('after one passed trial, failures of other transactions do not reopen it: it closes on passes', async () => {
    const t0 = 6_000_000;
    await store.report('open', t0, 'test');
    await store.report('health_ok', t0 + 5000);
    await store.report('trial_ok', t0 + 5010);
    for (const tx of ['tx-a', 'tx-b', 'tx-c', 'tx-d', 'tx-e', 'tx-f']) expect(await store.report('trial_fail', t0 + 5020, 'failed', tx)).toMatchObject({ state: 'half_open' });
    await store.report('trial_ok', t0 + 5030);
    expect(await store.report('trial_ok', t0 + 5040)).toMatchObject({ state: 'closed', changed: true });
  });

  it('a reported trial frees its slot for the next', async () => {
    const t0 = 7_000_000;
    await store.report('open', t0, 'test');
    await store.report('health_ok', t0 + 5000);
    for (let i = 0; i < BREAKER_POLICY.trials; i += 1) expect((await store.report('trial', t0 + 5001)).trial).toBe('trial');
    expect((await store.report('trial', t0 + 5002)).trial).toBe('wait');
    await store.report('trial_fail', t0 + 5003, 'failed', 'tx-a');
    expect((await store.report('trial', t0 + 5004)).trial).toBe('trial');
    await store.report('trial_ok', t0 + 5005);
    expect((await store.report('trial', t0 + 5006)).trial).toBe('trial');
  });

  it('a slot given back is granted again; a failed trial starts the quiet window anew', async () => {
    const t0 = 5_000_000;
    const window = BREAKER_POLICY.trialWindowMs;
    await store.report('open', t0, 'test');
    await store.report('health_ok', t0 + 5000);
    for (let i = 0; i < BREAKER_POLICY.trials; i += 1) expect((await store.report('trial', t0 + 5001)).trial).toBe('trial');
    expect((await store.report('trial', t0 + 5002)).trial).toBe('wait');
    await store.report('trial_unused', t0 + 5003);
    expect((await store.report('trial', t0 + 5004)).trial).toBe('trial');
    // one failed trial: passing health checks close it only a whole window after that failure
    await store.report('trial_fail', t0 + 6000, 'failed', 'tx-a');
    expect(await store.report('health_ok', t0 + 5000 + window)).toMatchObject({ state: 'half_open' });
    expect(await store.report('health_ok', t0 + 6000 + window)).toMatchObject({ state: 'closed', changed: true });
  });
});

describe('each process\'s breaker', () => {
  const failing = (transactionId: string): WalletCallEvent => ({
    operation: 'credit',
    outcome: 'rejected',
    code: Code.InternalServiceError,
    httpStatus: 500,
    walletRequestId: undefined,
    latencyMs: 1,
    transactionId,
    requestId: undefined,
    detail: undefined,
  });

  it('opens the shared state from its own window, and another process sees it and holds its retries', async () => {
    const healthy = { healthCheck: async () => ({ healthy: true, detail: '' }) };
    const gateway = createWalletBreaker({ store, logger: silent, observeCalls: true });
    const worker = createWalletBreaker({ store: createBreakerStore(redis, keysFor(prefix), BREAKER_POLICY), logger: silent, observeCalls: false });
    breakers.push(gateway, worker);
    gateway.start(healthy);
    worker.start(healthy);
    expect(await worker.gate('retry')).toEqual({ kind: 'go' });
    // A worker's own calls are retries: they never open it.
    for (const id of ['r1', 'r2', 'r3', 'r4', 'r5', 'r6']) for (let i = 0; i < 3; i += 1) worker.observe(failing(id));
    expect(await store.read()).toMatchObject({ state: 'closed' });
    for (const id of ['w1', 'w2', 'w3', 'w4', 'w5']) {
      gateway.observe(failing(id));
      gateway.observe(failing(id));
    }
    await waitFor('the gateway sees the breaker open', () => gateway.state() === 'open');
    expect(gateway.allowsCalls()).toBe(false);
    await waitFor('the worker sees it too', () => worker.state() === 'open');
    const gate = await worker.gate('retry');
    expect(gate.kind).toBe('wait');
    expect(gate.kind === 'wait' && gate.ms).toBeGreaterThan(0);
  });
});
