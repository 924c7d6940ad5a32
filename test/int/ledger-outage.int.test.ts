import { waitFor } from '../../src/lib/wait-for';
import { ledgerHarness, type LedgerHarness } from '../support/ledger-db';
import type { Harness, Player } from '../support/worker-harness';

/**
 * PostgreSQL away (contract 12): engines see no difference, the outbox grows, /readyz stays 200
 * naming the lag, /metrics shows it; once PostgreSQL answers again every change lands once, in order.
 */
let ledger: LedgerHarness;
let h: Harness;
let player: Player;

beforeAll(async () => {
  ledger = await ledgerHarness({ label: 'ledger-outage' });
  h = ledger.h;
  player = await h.newPlayer();
}, 60_000);

afterAll(async () => {
  await ledger?.close();
});

const outboxLength = (): Promise<number> => h.redis.xlen(h.store.layout.keys(0).ledgerOutbox());

it('keeps the money path as it is while PostgreSQL is away, then drains every change once, in order', async () => {
  ledger.proxy.cut();
  const bets = [];
  for (let i = 0; i < 5; i += 1) bets.push(await h.bet(player, `1.0${i}`));
  expect(bets.every((b) => b.state === 'succeeded')).toBe(true);
  expect(await outboxLength()).toBeGreaterThanOrEqual(bets.length * 2);

  const ready = await fetch(`${h.url}/readyz`);
  expect(ready.status).toBe(200);
  const body = (await ready.json()) as { ledger: { state: string; outbox_length: number; lag_seconds: number } };
  expect(body.ledger).toMatchObject({ state: 'behind' });
  expect(body.ledger.outbox_length).toBeGreaterThanOrEqual(bets.length * 2);
  const metrics = await (await fetch(`${h.url}/metrics`)).text();
  expect(metrics).toMatch(/^ledger_outbox_length [1-9][0-9]*$/m);
  expect(metrics).toMatch(/^ledger_lag_seconds [0-9.e+-]+$/m);

  ledger.proxy.restore();
  await waitFor('the outbox drained after the outage', async () => ((await outboxLength()) === 0 ? true : undefined), 30_000);
  for (const bet of bets) {
    const { rows } = await ledger.db.query<{ change_no: number; state: string; amount: string }>(
      'SELECT change_no, state, amount::text FROM ledger_changes WHERE transaction_id = $1 ORDER BY change_no',
      [bet.transactionId],
    );
    expect(rows.map((r) => r.change_no)).toEqual(rows.map((_, i) => i + 1));
    expect(rows.at(-1)).toMatchObject({ state: 'succeeded', amount: bet.amount });
  }
  const after = (await (await fetch(`${h.url}/readyz`)).json()) as { ledger: { state: string } };
  expect(after.ledger.state).toBe('current');
}, 60_000);
