import { waitFor } from '../../src/lib/wait-for';
import { engine, launch, startHarness, uniqueId, type Harness } from '../support/gateway-harness';

let h: Harness;

beforeAll(async () => {
  h = await startHarness({ label: 'gw-idem' });
});

afterAll(async () => {
  await h.close();
});

beforeEach(() => {
  h.sim.faults.clear();
  h.sim.clearCalls();
});

const debits = () => h.sim.calls().filter((c) => c.operation === 'debit');

describe('idempotency', () => {
  it('a repeat with the same body gets the stored answer without a wallet call', async () => {
    const { sessionId } = await launch(h);
    const id = uniqueId('bet');
    const first = await engine(h, `/sessions/${sessionId}/bet`, { round_id: 'r', transaction_id: id, amount: '10.5' });
    expect(first.status).toBe(200);
    // The same amount written differently, and round_closed given as its default, is the same body.
    const repeat = await engine(h, `/sessions/${sessionId}/bet`, { round_id: 'r', transaction_id: id, amount: '10.50', round_closed: false });
    expect(repeat.status).toBe(200);
    expect({ ...repeat.body, request_id: null }).toEqual({ ...first.body, request_id: null });
    expect(debits()).toHaveLength(1);
  });

  it('another body with a known transaction_id gets IDEMPOTENCY_CONFLICT', async () => {
    const { sessionId } = await launch(h);
    const id = uniqueId('bet');
    await engine(h, `/sessions/${sessionId}/bet`, { round_id: 'r', transaction_id: id, amount: '1' });
    h.sim.clearCalls();
    for (const other of [
      { round_id: 'r', transaction_id: id, amount: '2' },
      { round_id: 'r2', transaction_id: id, amount: '1' },
      { round_id: 'r', transaction_id: id, amount: '1', round_closed: true },
    ]) {
      const res = await engine(h, `/sessions/${sessionId}/bet`, other);
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('IDEMPOTENCY_CONFLICT');
    }
    const asWin = await engine(h, `/sessions/${sessionId}/win`, { round_id: 'r', transaction_id: id, bet_transaction_id: id, amount: '1' });
    expect(asWin.body.error.code).toBe('IDEMPOTENCY_CONFLICT');
    const otherSession = (await launch(h)).sessionId;
    const elsewhere = await engine(h, `/sessions/${otherSession}/bet`, { round_id: 'r', transaction_id: id, amount: '1' });
    expect(elsewhere.body.error.code).toBe('IDEMPOTENCY_CONFLICT');
    expect(h.sim.walletCalls().filter((c) => c.operation !== 'authenticate')).toHaveLength(0);
  });

  it('a duplicate while the first is still at the wallet gets IN_PROGRESS', async () => {
    const { sessionId } = await launch(h);
    h.sim.faults.latency('debit', 400);
    const id = uniqueId('bet');
    const args = { round_id: 'r', transaction_id: id, amount: '1' };
    const first = engine(h, `/sessions/${sessionId}/bet`, args).then((r) => r);
    await waitFor(`${id} claimed`, async () => (await h.transactions.get(id)) !== undefined);
    const dup = await engine(h, `/sessions/${sessionId}/bet`, args);
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe('IN_PROGRESS');
    expect((await first).status).toBe(200);
    const after = await engine(h, `/sessions/${sessionId}/bet`, args);
    expect(after.status).toBe(200);
    expect(debits()).toHaveLength(1);
  });

  it('20 concurrent identical bets reach the wallet once', async () => {
    const { sessionId, playerId } = await launch(h);
    h.sim.faults.latency('debit', 100);
    const id = uniqueId('bet');
    const all = await Promise.all(
      Array.from({ length: 20 }, () => engine(h, `/sessions/${sessionId}/bet`, { round_id: 'r', transaction_id: id, amount: '3' })),
    );
    const statuses = all.map((r) => r.status);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(1);
    expect(statuses.every((s) => s === 200 || s === 409)).toBe(true);
    for (const r of all.filter((x) => x.status === 409)) expect(r.body.error.code).toBe('IN_PROGRESS');
    expect(debits()).toHaveLength(1);
    expect(h.sim.ledger.appliedCount(id)).toBe(1);
    expect(h.sim.ledger.balanceOf(playerId)).toBe('997.00');
  });
});
