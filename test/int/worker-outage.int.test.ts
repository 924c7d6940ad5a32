import { BREAKER_POLICY } from '../../src/duties/breaker-policy';
import { waitFor } from '../../src/lib/wait-for';
import { createBreakerStore, type BreakerStore } from '../../src/store/breaker';
import { keysFor } from '../../src/store/keys';
import { Code } from '../../src/wallet/codes';
import { callsFor, startHarness, type Harness, type Player } from '../support/worker-harness';

/**
 * A wallet outage met by background work already under way (contract 5.3, "Outages"): the real
 * gateway side, a real worker and the simulator over HTTP; nothing of the breaker is stubbed.
 */
let h: Harness;
let player: Player;
let breaker: BreakerStore;

const OUTAGE_MS = 60_000;
const balance = () => h.sim.ledger.balanceOf(player.fields.player_id)!;
const breakerState = async () => (await breaker.read()).state;

beforeAll(async () => {
  h = await startHarness({ label: 'wout' });
  await h.startWorker();
  player = await h.newPlayer();
  breaker = createBreakerStore(h.redis, keysFor(h.prefix), BREAKER_POLICY);
});

afterEach(() => {
  h.sim.faults.clear();
  h.sim.faults.down(null);
});

afterAll(async () => {
  await h.close();
});

it(
  'a compensation whose first tries failed just before the breaker opened is applied once after a 60 s outage, within 1 + 10 sends',
  async () => {
    const start = balance();
    // A bet the wallet applied but whose answer never came: it must be rolled back. Its rollback's
    // first four tries fail (the wallet's calls are failing), then the wallet goes down for good.
    h.sim.faults.applyThenDrop('debit', 1, { mode: 'hang' });
    h.sim.faults.failNext('rollback', 4, Code.InternalServiceError);
    const { debit, compensationId } = await h.refusedDebit(player);
    await waitFor('four failed tries of the compensation', () => callsFor(h.sim, compensationId, 'rollback').length >= 4, 20_000, { intervalMs: 20 });
    // Every call answered 12 for half the outage and never answered for the other half; the
    // health check fails throughout (the soak's outage).
    h.sim.faults.down('code');
    const downAt = Date.now();

    // With no engine traffic, only the health checks can open the breaker. Until it opens, the
    // compensation must not spend the sends the outage ought to hold.
    await waitFor('the breaker open', async () => (await breakerState()) === 'open', 30_000, { intervalMs: 100 });
    const atOpen = (await h.store.get(compensationId))!;
    expect(atOpen.state).toBe('pending');
    expect(atOpen.attempts).toBeLessThanOrEqual(5);

    await waitFor('half the outage', () => Date.now() - downAt >= OUTAGE_MS / 2, OUTAGE_MS, { intervalMs: 200 });
    h.sim.faults.down('hang');
    await waitFor('the end of the outage', () => Date.now() - downAt >= OUTAGE_MS, OUTAGE_MS, { intervalMs: 200 });
    // Nothing was sent for it while the breaker was open.
    expect(callsFor(h.sim, compensationId, 'rollback')).toHaveLength(atOpen.attempts);
    h.sim.faults.down(null);

    const settled = await waitFor(
      'the debit compensated',
      async () => {
        const record = await h.store.get(debit.transactionId);
        return record !== undefined && record.state !== 'compensating' ? record : undefined;
      },
      60_000,
      { intervalMs: 100 },
    );
    expect(settled.state).toBe('compensated');
    const compensation = (await h.store.get(compensationId))!;
    expect(compensation).toMatchObject({ state: 'succeeded', lastWalletCode: Code.Success });
    // attempts counts every try sent, the first included: at most 1 + the spec's 10 retries.
    const sends = callsFor(h.sim, compensationId, 'rollback');
    expect(compensation.attempts).toBe(sends.length);
    expect(sends.length).toBeLessThanOrEqual(11);
    expect(h.sim.ledger.appliedCount(compensationId)).toBe(1);
    expect(balance()).toBe(start);
  },
  180_000,
);
