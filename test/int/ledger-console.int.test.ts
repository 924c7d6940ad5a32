import { randomUUID } from 'node:crypto';
import { waitFor } from '../../src/lib/wait-for';
import type { TransactionRecord } from '../../src/store/types';
import { ledgerHarness, type LedgerHarness } from '../support/ledger-db';
import type { Harness, Player } from '../support/worker-harness';

/**
 * The money console past Redis's retention (contract 12): the transaction, round and player pages
 * (and their JSON) read the ledger for what Redis no longer holds and say so per record and per
 * row; a ledger-only record offers no actions; the ledger away leaves the pages showing what Redis
 * holds, saying the ledger did not answer; the late repeats page lists ids exactly.
 */
let ledger: LedgerHarness;
let h: Harness;
let alice: Player;

const AUTH = { authorization: `Basic ${Buffer.from('ops:ops-password').toString('base64')}` };
const FROM_LEDGER = 'From the ledger (PostgreSQL): Redis no longer holds this record.';

async function get(path: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`${h.url}${path}`, { headers: AUTH });
  return { status: res.status, text: await res.text() };
}

const json = async (path: string): Promise<{ status: number; body: Record<string, unknown> }> => {
  const { status, text } = await get(path);
  return { status, body: JSON.parse(text) as Record<string, unknown> };
};

/** Each table row's (transaction id, source) on a page. */
const sources = (html: string): Record<string, string> =>
  Object.fromEntries([...html.matchAll(/<tr data-id="([^"]*)" data-wallet="[^"]*" data-source="([^"]*)">/g)].map((m) => [m[1]!, m[2]!]));

/** A bet and its win, both final in the ledger. */
async function settledRound(player: Player, bet: string, win: string): Promise<{ bet: TransactionRecord; winId: string }> {
  const b = await h.bet(player, bet);
  const w = await h.settleInline(player, 'credit', b, { amount: win });
  await h.inState(w.id, 'succeeded');
  await waitFor('the round final in the ledger', async () => {
    const { body } = await json(`/admin/api/history/rounds/${encodeURIComponent(b.roundId)}`);
    const rows = (body.transactions ?? []) as { state: string }[];
    return rows.length === 2 && rows.every((r) => r.state === 'succeeded') ? true : undefined;
  }, 20_000);
  return { bet: b, winId: w.id };
}

/** The record past its retention: gone from Redis, as its expiry leaves it. */
async function forget(id: string): Promise<void> {
  expect(await h.redis.del(h.store.layout.keys(0).transaction(id))).toBe(1);
}

beforeAll(async () => {
  ledger = await ledgerHarness({ label: 'ledger-console', env: { ADMIN_USER: 'ops', ADMIN_PASSWORD: 'ops-password' } });
  h = ledger.h;
  alice = await h.newPlayer();
}, 90_000);

afterAll(async () => {
  await ledger?.close();
});

afterEach(() => ledger.proxy.restore());

it('shows a transaction Redis forgot from the ledger, every change, saying so, with no actions', async () => {
  const { bet, winId } = await settledRound(alice, '7.25', '0.10');
  // An operator's action on it while Redis held it: its audit entry stays with the ledger's record.
  const recheck = await fetch(`${h.url}/admin/api/transactions/${bet.transactionId}/recheck`, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body: JSON.stringify({ note: 'asked by support' }) });
  expect(recheck.status).toBeLessThan(500);
  await forget(bet.transactionId);
  await waitFor('the audit entry in the ledger', async () => {
    const { body } = await json(`/admin/api/transactions/${bet.transactionId}`);
    return body.source === 'ledger' && (body.audit as unknown[]).length === 1 ? true : undefined;
  }, 20_000);
  for (const query of [`id=${bet.transactionId}&wallet=default`, `id=${bet.transactionId}`]) {
    const page = await get(`/admin/tx?${query}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain(FROM_LEDGER);
    expect(page.text).toContain('data-no-actions');
    expect(page.text).not.toContain('method="post"');
    expect(page.text).toContain('7.25 EUR');
    expect(page.text).toMatch(/<tr data-audit data-wallet="default">[^]*?recheck[^]*?asked by support/);
    expect(page.text.match(/<tr data-change="\d+">/g)?.length).toBeGreaterThanOrEqual(2);
    // The round: the bet from the ledger, its win still in Redis, each row saying which.
    expect(sources(page.text)).toEqual({ [bet.transactionId]: 'ledger', [winId]: 'redis' });
  }
  const { status, body } = await json(`/admin/api/transactions/${bet.transactionId}`);
  expect(status).toBe(200);
  expect(body).toMatchObject({ transaction_id: bet.transactionId, source: 'ledger', state: 'succeeded', ledger: 'read' });
  expect((body.changes as { change_no: number }[]).map((c) => c.change_no)).toEqual((body.changes as unknown[]).map((_, i) => i + 1));
  expect(body.audit).toEqual([expect.objectContaining({ action: 'recheck', transactionId: bet.transactionId, note: 'asked by support', user: 'ops' })]);
  expect((body.round as { transaction_id: string; source: string }[]).map((r) => [r.transaction_id, r.source])).toEqual([[bet.transactionId, 'ledger'], [winId, 'redis']]);
  expect((await get('/admin/tx?id=never-made-anywhere')).status).toBe(404);
  // An action on it (an old form) finds nothing in Redis to act on, and the page says so above the ledger's record.
  const acted = await fetch(`${h.url}/admin/tx/recheck?id=${bet.transactionId}&wallet=default`, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/x-www-form-urlencoded' }, body: 'note=an+old+form' });
  const actedText = await acted.text();
  expect(acted.status).toBe(200);
  expect(actedText).toContain('No such transaction.');
  expect(actedText).toContain(FROM_LEDGER);
});

it('says per row where a round partly in Redis came from, on the transaction and round pages', async () => {
  const { bet, winId } = await settledRound(alice, '2.00', '3.00');
  await forget(bet.transactionId);
  const page = await get(`/admin/tx?id=${winId}&wallet=default`);
  expect(page.status).toBe(200);
  expect(page.text).not.toContain(FROM_LEDGER);
  expect(page.text).toContain('data-ledger="mixed"');
  expect(sources(page.text)).toEqual({ [bet.transactionId]: 'ledger', [winId]: 'redis' });
  const round = await get(`/admin/round?id=${encodeURIComponent(bet.roundId)}&wallet=default&player_id=${alice.fields.player_id}&site_id=${alice.fields.site_id}`);
  expect(round.status).toBe(200);
  expect(sources(round.text)).toEqual({ [bet.transactionId]: 'ledger', [winId]: 'redis' });
  const { body } = await json(`/admin/api/transactions/${winId}`);
  expect(body).toMatchObject({ source: 'redis', ledger: 'read' });
  expect((body.round as { transaction_id: string; source: string }[]).map((r) => [r.transaction_id, r.source])).toEqual([[bet.transactionId, 'ledger'], [winId, 'redis']]);
});

it("shows a player's rounds Redis forgot from the ledger, each row naming its source", async () => {
  const bob = await h.newPlayer();
  const gone = await settledRound(bob, '1.50', '4.50');
  const kept = await settledRound(bob, '1.00', '0.50');
  await forget(gone.bet.transactionId);
  await forget(gone.winId);
  const page = await get(`/admin/players/${bob.fields.player_id}?site_id=${bob.fields.site_id}&wallet=default`);
  expect(page.status).toBe(200);
  expect(sources(page.text)).toEqual({ [gone.bet.transactionId]: 'ledger', [gone.winId]: 'ledger', [kept.bet.transactionId]: 'redis', [kept.winId]: 'redis' });
  expect(page.text).toContain('data-ledger="mixed"');
  const { body } = await json(`/admin/api/players/${bob.fields.player_id}/rounds?site_id=${bob.fields.site_id}`);
  const rounds = body.rounds as { round_id: string; transactions: { transaction_id: string; source: string }[] }[];
  expect(rounds.map((r) => r.round_id)).toEqual([kept.bet.roundId, gone.bet.roundId]);
  expect(rounds[1]!.transactions.map((t) => t.source)).toEqual(['ledger', 'ledger']);
});

it('renders what Redis holds when the ledger does not answer, saying so (no 500)', async () => {
  const { bet, winId } = await settledRound(alice, '5.00', '1.00');
  await forget(bet.transactionId);
  ledger.proxy.cut();
  const page = await get(`/admin/tx?id=${winId}&wallet=default`);
  expect(page.status).toBe(200);
  expect(page.text).toContain('data-ledger="unavailable"');
  expect(page.text).toContain('method="post"');
  expect(Object.keys(sources(page.text))).toEqual([]);
  expect(page.text).toContain(`data-id="${winId}"`);
  const player = await get(`/admin/players/${alice.fields.player_id}?site_id=${alice.fields.site_id}`);
  expect(player.status).toBe(200);
  expect(player.text).toContain('data-ledger="unavailable"');
  const { status, body } = await json(`/admin/api/transactions/${winId}`);
  expect(status).toBe(200);
  expect(body).toMatchObject({ source: 'redis', ledger: 'unavailable' });
  // Only the ledger holds the bet: its page says the ledger did not answer.
  const forgotten = await get(`/admin/tx?id=${bet.transactionId}&wallet=default`);
  expect(forgotten.status).toBe(503);
  expect(forgotten.text).toContain('the ledger (PostgreSQL) did not answer');
  expect((await json(`/admin/api/transactions/${bet.transactionId}`)).body.error).toMatchObject({ code: 'LEDGER_UNAVAILABLE' });
  // The history API reads only the ledger: 503 naming it, never a 500.
  for (const path of ['/admin/api/history/transactions', `/admin/api/history/transactions/${bet.transactionId}`]) {
    const history = await json(path);
    expect(history.status).toBe(503);
    expect(history.body.error).toMatchObject({ code: 'LEDGER_UNAVAILABLE' });
  }
});

it('lists late repeats on their own console page, linked from the navigation, ids exact and escaped', async () => {
  const { bet } = await settledRound(alice, '0.01', '0.02');
  await forget(bet.transactionId);
  const res = await fetch(`${h.url}/engine/v1/sessions/${alice.session.sessionId}/bet`, {
    method: 'POST',
    headers: { authorization: 'Bearer worker-harness-engine-key', 'content-type': 'application/json' },
    body: JSON.stringify({ round_id: randomUUID(), transaction_id: bet.transactionId, amount: 0.5 }),
  });
  expect(res.status).toBeLessThan(500);
  const page = await waitFor('the late repeat on its page', async () => {
    const p = await get('/admin/late-repeats?wallet=default');
    return p.text.includes(`data-id="${bet.transactionId}"`) ? p : undefined;
  }, 15_000);
  expect(page.status).toBe(200);
  expect(page.text).toContain(`<a href="/admin/tx?id=${bet.transactionId}&#38;wallet=default">${bet.transactionId}</a>`);
  expect(page.text).toContain('<a href="/admin/late-repeats" aria-current="page">Late repeats</a>');
  expect((await get('/admin')).text).toContain('<a href="/admin/late-repeats">Late repeats</a>');
  // The record page names the earlier record of the same id.
  expect((await get(`/admin/tx?id=${bet.transactionId}`)).status).toBe(200);
  expect((await fetch(`${h.url}/admin/late-repeats`)).status).toBe(401);
  const bad = await get('/admin/late-repeats?wallet=%3Cscript%3E');
  expect(bad.status).toBe(400);
  expect(bad.text).not.toContain('<script>');
});
