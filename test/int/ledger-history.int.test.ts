import { waitFor } from '../../src/lib/wait-for';
import { parseCsvLine } from '../support/csv';
import { ledgerHarness, type LedgerHarness } from '../support/ledger-db';
import type { Harness, Player } from '../support/worker-harness';

/**
 * The ledger's history API (contract 12): filters, keyset pagination newest first, one transaction
 * with every change, a round's transactions; amounts and ids exact in the JSON text itself.
 */
let ledger: LedgerHarness;
let h: Harness;
let alice: Player;
let bob: Player;
const made: { id: string; player: Player; kind: string; round: string }[] = [];

const AUTH = { authorization: `Basic ${Buffer.from('ops:ops-password').toString('base64')}` };

async function get(path: string): Promise<{ status: number; text: string; body: Record<string, unknown> }> {
  const res = await fetch(`${h.url}${path}`, { headers: AUTH });
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text) as Record<string, unknown> };
}

type Row = { transaction_id: string; kind: string; state: string; created_at: string; wallet: string; change_no: number };

beforeAll(async () => {
  ledger = await ledgerHarness({ label: 'ledger-history', env: { ADMIN_USER: 'ops', ADMIN_PASSWORD: 'ops-password' } });
  h = ledger.h;
  alice = await h.newPlayer();
  bob = await h.newPlayer();
  for (const [player, amount] of [[alice, '1.10'], [bob, '2.20'], [alice, '3.30'], [bob, '0.05']] as const) {
    const bet = await h.bet(player, amount);
    made.push({ id: bet.transactionId, player, kind: 'debit', round: bet.roundId });
    const win = await h.settleInline(player, 'credit', bet, { amount: '12.34' });
    made.push({ id: win.id, player, kind: 'credit', round: bet.roundId });
    await h.inState(win.id, 'succeeded');
  }
  await waitFor('every record final in the ledger', async () => {
    const { body } = await get('/admin/api/history/transactions?limit=500&state=succeeded');
    return (body.transactions as Row[]).length === made.length ? true : undefined;
  }, 20_000);
}, 90_000);

afterAll(async () => {
  await ledger?.close();
});

it('pages through every transaction newest first with the cursor, each once', async () => {
  const seen: Row[] = [];
  let cursor: string | null = null;
  do {
    const page = await get(`/admin/api/history/transactions?limit=3${cursor === null ? '' : `&cursor=${cursor}`}`);
    expect(page.status).toBe(200);
    expect((page.body.transactions as Row[]).length).toBeLessThanOrEqual(3);
    seen.push(...(page.body.transactions as Row[]));
    cursor = page.body.next_cursor as string | null;
  } while (cursor !== null);
  expect(seen.map((r) => r.transaction_id).sort()).toEqual(made.map((m) => m.id).sort());
  const times = seen.map((r) => Date.parse(r.created_at));
  expect(times).toEqual([...times].sort((a, b) => b - a));
});

it('filters by player, kind, state, round and time', async () => {
  const byPlayer = await get(`/admin/api/history/transactions?player_id=${alice.fields.player_id}&site_id=${alice.fields.site_id}&kind=credit`);
  expect((byPlayer.body.transactions as Row[]).map((r) => r.transaction_id).sort()).toEqual(made.filter((m) => m.player === alice && m.kind === 'credit').map((m) => m.id).sort());
  const round = made[2]!.round;
  const byRound = await get(`/admin/api/history/transactions?round_id=${round}&wallet=default`);
  expect((byRound.body.transactions as Row[]).map((r) => r.transaction_id).sort()).toEqual(made.filter((m) => m.round === round).map((m) => m.id).sort());
  expect((await get('/admin/api/history/transactions?state=dead')).body.transactions).toEqual([]);
  const future = new Date(Date.now() + 3_600_000).toISOString();
  expect((await get(`/admin/api/history/transactions?from=${encodeURIComponent(future)}`)).body.transactions).toEqual([]);
  expect(((await get(`/admin/api/history/transactions?to=${encodeURIComponent(future)}&limit=500`)).body.transactions as Row[]).length).toBe(made.length);
});

it('answers one transaction with every change, amounts and ids exact in the JSON text', async () => {
  const small = made[6]!;
  const { status, text, body } = await get(`/admin/api/history/transactions/${small.id}?wallet=default`);
  expect(status).toBe(200);
  expect(body).toMatchObject({ transaction_id: small.id, kind: 'debit', state: 'succeeded', wallet: 'default', source: 'ledger' });
  const changes = body.changes as Row[];
  expect(changes.map((c) => c.change_no)).toEqual(changes.map((_, i) => i + 1));
  expect(changes[0]!.state).toBe('pending');
  expect(text).toContain('"amount":0.05');
  expect(text).toContain(`"player_id":${small.player.fields.player_id}`);
  expect((await get('/admin/api/history/transactions/no-such-id')).status).toBe(404);
});

it("answers a round's transactions in the order they were made", async () => {
  const round = made[0]!.round;
  const { status, body } = await get(`/admin/api/history/rounds/${round}`);
  expect(status).toBe(200);
  expect((body.transactions as Row[]).map((r) => r.transaction_id)).toEqual([made[0]!.id, made[1]!.id]);
  expect((await get('/admin/api/history/rounds/no-such-round')).status).toBe(404);
});

it('refuses bad input with 400 naming the field, and asks for credentials', async () => {
  const bad = await get('/admin/api/history/transactions?limit=501&kind=bonus&player_id=18446744073709551616&cursor=zzz');
  expect(bad.status).toBe(400);
  const fields = ((bad.body.error as { fields: { field: string }[] }).fields).map((f) => f.field).sort();
  expect(fields).toEqual(['kind', 'limit', 'player_id']);
  expect((await get('/admin/api/history/transactions?cursor=zzz')).status).toBe(400);
  expect((await get('/admin/api/history/transactions?unknown=1')).status).toBe(400);
  expect((await fetch(`${h.url}/admin/api/history/transactions`)).status).toBe(401);
  const fieldsOf = async (path: string) => {
    const res = await get(path);
    expect(res.status).toBe(400);
    return (res.body.error as { fields: { field: string }[] }).fields.map((f) => f.field);
  };
  const tooLong = 'x'.repeat(300);
  expect(await fieldsOf(`/admin/api/history/transactions/${tooLong}`)).toEqual(['transaction_id']);
  expect(await fieldsOf(`/admin/api/history/rounds/${tooLong}`)).toEqual(['round_id']);
  expect(await fieldsOf(`/admin/api/history/transactions/${made[0]!.id}?wallet=Not_A_Wallet`)).toEqual(['wallet']);
  expect(await fieldsOf(`/admin/api/history/rounds/${made[0]!.round}?unknown=1`)).toEqual(['unknown']);
});

it('answers GET /engine/v1/transactions/{id} from the ledger once Redis has forgotten the record', async () => {
  const win = made[3]!;
  const engineGet = (id: string) => fetch(`${h.url}/engine/v1/transactions/${id}`, { headers: { authorization: 'Bearer worker-harness-engine-key' } });
  const fromRedis = (await (await engineGet(win.id)).json()) as Record<string, unknown>;
  // The record past its retention: gone from Redis, as its expiry would leave it.
  expect(await h.redis.del(h.store.layout.keys(0).transaction(win.id))).toBe(1);
  const res = await engineGet(win.id);
  expect(res.status).toBe(200);
  const text = await res.text();
  const fromLedger = JSON.parse(text) as Record<string, unknown>;
  const { request_id: _a, ...redisView } = fromRedis;
  const { request_id: _b, ...ledgerView } = fromLedger;
  expect(ledgerView).toEqual(redisView);
  expect(text).toContain('"amount":12.34');
  expect((await engineGet('never-made-1')).status).toBe(404);
});

it('flags a transaction id the engine repeats after Redis forgot it, and lists it for an operator', async () => {
  const bet = made[4]!;
  expect(bet.kind).toBe('debit');
  expect(await h.redis.del(h.store.layout.keys(0).transaction(bet.id))).toBe(1);
  const res = await fetch(`${h.url}/engine/v1/sessions/${bet.player.session.sessionId}/bet`, {
    method: 'POST',
    headers: { authorization: 'Bearer worker-harness-engine-key', 'content-type': 'application/json' },
    body: JSON.stringify({ round_id: `late-${bet.round}`.slice(0, 36), transaction_id: bet.id, amount: 0.5 }),
  });
  expect(res.status).toBeLessThan(500);
  const listed = await waitFor('the late repeat listed', async () => {
    const { body } = await get('/admin/api/history/late-repeats');
    const found = (body.late_repeats as { transaction_id: string }[]).filter((r) => r.transaction_id === bet.id);
    return found.length > 0 ? found : undefined;
  }, 15_000);
  expect(listed).toHaveLength(1);
  const { body, text } = await get(`/admin/api/history/transactions/${bet.id}`);
  expect(body).toMatchObject({ transaction_id: bet.id, round_id: `late-${bet.round}`.slice(0, 36) });
  expect(body.earlier_records as unknown[]).toHaveLength(1);
  // The first record (the bet of 3.30) kept as it was.
  expect(text).toContain('"earlier_records":[{"wallet":"default","transaction_id"');
  expect(text).toMatch(/"earlier_records":\[\{[^\]]*"amount":3\.30,/);
});

it('exports from the ledger with source=ledger: every record of the window, exact amounts, CSV and JSON', async () => {
  const from = encodeURIComponent(new Date(Date.now() - 3_600_000).toISOString());
  const to = encodeURIComponent(new Date(Date.now() + 60_000).toISOString());
  const csv = await fetch(`${h.url}/admin/api/export?from=${from}&to=${to}&source=ledger&wallet=default`, { headers: AUTH });
  expect(csv.status).toBe(200);
  const lines = (await csv.text()).trim().split('\r\n').map(parseCsvLine);
  const header = lines[0]!;
  const rows = lines.slice(1).map((cells) => Object.fromEntries(header.map((name, i) => [name, cells[i]])));
  for (const m of made) expect(rows.filter((r) => r.transaction_id === m.id).length).toBeGreaterThanOrEqual(1);
  expect(rows.find((r) => r.transaction_id === made[6]!.id)).toMatchObject({ wallet: 'default', kind: 'debit', amount: '0.05', player_id: made[6]!.player.fields.player_id });

  const json = await fetch(`${h.url}/admin/api/export?from=${from}&to=${to}&source=ledger&format=json&player_id=${bob.fields.player_id}&site_id=${bob.fields.site_id}`, { headers: AUTH });
  const text = await json.text();
  const parsed = JSON.parse(text) as { transaction_id: string; player_id: string }[];
  expect(parsed.map((r) => r.transaction_id).sort()).toEqual(made.filter((m) => m.player === bob).map((m) => m.id).sort());
  expect(text).toContain(`"player_id":"${bob.fields.player_id}"`);

  const refused = await fetch(`${h.url}/admin/api/export?from=${from}&to=${to}&source=ledger&status=1`, { headers: AUTH });
  expect(refused.status).toBe(400);
});
