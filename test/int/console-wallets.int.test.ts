import request from 'supertest';
import { createClosers, startWith } from '../../src/lib/lifecycle';
import type { RunningGateway } from '../../src/main/gateway';
import type { RunningSimulator } from '../../src/sim';
import { Code } from '../../src/wallet/codes';
import { body, newPlayerId, uniqueId } from '../support/gateway-harness';
import { parseCsvLine } from '../support/csv';
import { logSink } from '../support/log-sink';
import { deletePrefix, redisUrl, testPrefix } from '../support/prefix';
import { startTwoWallets } from '../support/two-wallets';
import { basicAuth } from '../support/wired-gateway';

/**
 * The money console over two wallets of one registry (contract 11), through the real gateway on
 * real Redis and two real simulators over HTTP, each checking its own credentials and signature:
 * casino-a (the home wallet: HMAC-SHA256, hex) and casino-b (HMAC-SHA512, base64, another provider
 * id). Every page and list names each record's wallet and filters by it; the same transaction id in
 * both wallets is two records, told apart; an action on casino-b's record runs at casino-b's wallet
 * and is audited in casino-b's trail; the export has a `wallet` column and filter; no secret is
 * on any page, answer or export.
 */
const A = { user: 'gw-a', password: 'pw-a-secret-1001', secret: 'sign-a-secret-1002', provider: '11' } as const;
const B = { user: 'gw-b', password: 'pw-b-secret-1003', secret: 'sign-b-secret-1004', provider: '18446744073709551615' } as const;
const ENGINE_KEY = 'studio-x-key-1005';
const ADMIN = { user: 'ops', password: 'ops-password-1006' } as const;
const SECRETS = [A.password, A.secret, B.password, B.secret, ENGINE_KEY, ADMIN.password];
const auth = basicAuth(ADMIN.user, ADMIN.password);

const prefix = testPrefix('console-wallets');
const logs = logSink();
const closers = createClosers();
let simA: RunningSimulator;
let simB: RunningSimulator;
let gateway: RunningGateway;
/** Every page, answer and export the tests read: none may hold a secret. */
const seen: string[] = [];
const startedAt = Date.now();

beforeAll(async () => {
  await startWith(closers, async () => {
    closers.defer('redis', () => deletePrefix(prefix));
    ({ simA, simB, gateway } = await startTwoWallets(closers, {
      label: 'console-wallets',
      a: { id: 'casino-a', ...A },
      b: { id: 'casino-b', ...B },
      registry: () => ({ engines: [{ id: 'studio-x', keys: [ENGINE_KEY], wallets: ['casino-a', 'casino-b'] }] }),
      env: { REDIS_URL: redisUrl(), QUEUE_PREFIX: prefix, ADMIN_USER: ADMIN.user, ADMIN_PASSWORD: ADMIN.password, BIG_WIN_AMOUNT: '3' },
      logs: logs.destination,
    }));
  });
});

afterAll(async () => {
  await closers.closeAll();
});

afterEach(() => {
  simA.faults.clear();
  simB.faults.clear();
});

async function admin(path: string, query: Record<string, string> = {}) {
  const res = await request(gateway.url).get(path).query(query).set('Authorization', auth);
  seen.push(res.text);
  return res;
}

async function act(path: string, fields: Record<string, string>) {
  const res = await request(gateway.url).post(path).set('Authorization', auth).type('form').send(fields);
  seen.push(res.text);
  return res;
}

async function launch(wallet: 'casino-a' | 'casino-b', token: string, playerId: string): Promise<string> {
  const res = await request(gateway.url).get(`/launch/${wallet}`).query({ token, player_id: playerId, site_id: '7', currency: 'EUR', game_id: 'slot-1' }).set('Accept', 'application/json');
  expect(res.status).toBe(200);
  return (res.body as { session_id: string }).session_id;
}

async function engine(path: string, fields: Record<string, unknown>) {
  return request(gateway.url).post(`/engine/v1${path}`).set('Authorization', `Bearer ${ENGINE_KEY}`).set('Content-Type', 'application/json').send(body(fields));
}

const storeOf = (wallet: string) => gateway.parts.wallets.get(wallet)!.transactions;

/**
 * A bet and a win at `wallet`, the win's first credit refused with a retry code (pending), then
 * made dead the way exhausted retries leave it.
 */
async function deadWin(wallet: 'casino-a' | 'casino-b', ids: { sessionId: string; roundId: string; betId: string; winId: string }, amounts: { bet: string; win: string }) {
  const sim = wallet === 'casino-a' ? simA : simB;
  const sid = encodeURIComponent(ids.sessionId);
  expect((await engine(`/sessions/${sid}/bet`, { round_id: ids.roundId, transaction_id: ids.betId, amount: amounts.bet })).status).toBe(200);
  sim.faults.failNext('credit', 1, Code.InternalServiceError, { transactionId: ids.winId });
  expect((await engine(`/sessions/${sid}/win`, { round_id: ids.roundId, transaction_id: ids.winId, bet_transaction_id: ids.betId, amount: amounts.win })).status).toBe(202);
  const store = storeOf(wallet);
  const record = (await store.get(ids.winId))!;
  expect(await store.settle(record, { state: 'dead', expect: ['pending'], note: 'retries exhausted' })).toBe(true);
}

/** The same token, player, round and transaction ids at both wallets, each win dead (amounts differ: 4.00 at A, 6.00 at B). */
async function sameIdsInBothWallets() {
  const token = uniqueId('tok');
  const playerId = newPlayerId();
  // Ids a spreadsheet would read as formulas: the export must neutralise them in every wallet's rows.
  const ids = { roundId: `=1+2;${uniqueId('r')}`, betId: uniqueId('b'), winId: `@${uniqueId('w')}` };
  await deadWin('casino-a', { ...ids, sessionId: await launch('casino-a', token, playerId) }, { bet: '1.00', win: '4.00' });
  await deadWin('casino-b', { ...ids, sessionId: await launch('casino-b', token, playerId) }, { bet: '2.00', win: '6.00' });
  return { ...ids, playerId };
}

/** Rows of a page's record tables: [wallet, transaction id]. */
const rowsOf = (html: string) => [...html.matchAll(/<tr data-id="([^"]*)" data-wallet="([^"]*)">/g)].map((m) => [m[2], m[1]]);
const unescapeHtml = (text: string) => text.replace(/&#(\d+);/g, (_m, code: string) => String.fromCharCode(Number(code)));

describe('the same transaction id in two wallets', () => {
  it('is two records shown apart: each row names its wallet, a wallet filter keeps one, a lookup without a wallet is 409 AMBIGUOUS_TRANSACTION', async () => {
    const { winId, playerId } = await sameIdsInBothWallets();

    const all = await admin('/admin/api/transactions', { state: 'dead', player_id: playerId });
    expect(all.status).toBe(200);
    expect((all.body.transactions as { wallet: string; transaction_id: string; amount: number }[]).map((t) => [t.wallet, t.transaction_id])).toEqual([
      ['casino-a', winId],
      ['casino-b', winId],
    ]);
    expect(all.text).toContain('"amount":4.00');
    expect(all.text).toContain('"amount":6.00');
    const onlyB = await admin('/admin/api/transactions', { state: 'dead', player_id: playerId, wallet: 'casino-b' });
    expect((onlyB.body.transactions as { wallet: string }[]).map((t) => t.wallet)).toEqual(['casino-b']);

    const listPage = await admin('/admin/transactions-list', { state: 'dead', player_id: playerId });
    expect(listPage.status).toBe(200);
    expect(rowsOf(unescapeHtml(listPage.text))).toEqual([
      ['casino-a', winId],
      ['casino-b', winId],
    ]);
    expect(listPage.text).toMatch(/<select name="wallet"><option value="" selected>all wallets<\/option><option value="casino-a">casino-a<\/option><option value="casino-b">casino-b<\/option>/);
    const listB = await admin('/admin/transactions-list', { state: 'dead', player_id: playerId, wallet: 'casino-b' });
    expect(rowsOf(unescapeHtml(listB.text))).toEqual([['casino-b', winId]]);

    const ambiguous = await admin(`/admin/api/transactions/${encodeURIComponent(winId)}`);
    expect(ambiguous.status).toBe(409);
    expect(ambiguous.body.error.code).toBe('AMBIGUOUS_TRANSACTION');
    const ambiguousPage = await admin('/admin/tx', { id: winId });
    expect(ambiguousPage.status).toBe(409);
    expect(ambiguousPage.text).toContain(`href="/admin/tx?id=${encodeURIComponent(winId)}&#38;wallet=casino-a"`);
    expect(ambiguousPage.text).toContain(`href="/admin/tx?id=${encodeURIComponent(winId)}&#38;wallet=casino-b"`);

    const atB = await admin(`/admin/api/transactions/${encodeURIComponent(winId)}`, { wallet: 'casino-b' });
    expect(atB.status).toBe(200);
    expect(atB.body).toMatchObject({ wallet: 'casino-b', transaction_id: winId, state: 'dead' });
    expect(atB.text).toContain('"amount":6.00');
    expect(atB.text).toContain(`"player_id":${playerId}`);
    expect((atB.body.round as { wallet: string; amount: number }[]).map((r) => r.wallet)).toEqual(['casino-b', 'casino-b']);
    const pageB = await admin('/admin/tx', { id: winId, wallet: 'casino-b' });
    expect(pageB.status).toBe(200);
    expect(pageB.text).toContain('<dt>Wallet</dt><dd>casino-b</dd>');
    expect(pageB.text).toContain('6.00 EUR');
    expect(pageB.text).not.toContain('4.00 EUR');
    // Every action form of the page posts to the record's own wallet.
    const forms = [...pageB.text.matchAll(/<form method="post" action="([^"]+)"/g)].map((m) => unescapeHtml(m[1]!));
    expect(forms.length).toBeGreaterThanOrEqual(3);
    for (const action of forms) expect(new URL(action, gateway.url).searchParams.get('wallet')).toBe('casino-b');

    // A player id names a player at one casino: the page shows each wallet's rounds under its wallet, or one wallet's.
    const player = await admin(`/admin/api/players/${playerId}/rounds`, { site_id: '7' });
    expect((player.body.rounds as { wallet: string }[]).map((r) => r.wallet)).toEqual(['casino-a', 'casino-b']);
    const playerB = await admin(`/admin/players/${playerId}`, { site_id: '7', wallet: 'casino-b' });
    expect(new Set(rowsOf(playerB.text).map(([wallet]) => wallet))).toEqual(new Set(['casino-b']));

    // Big wins (BIG_WIN_AMOUNT 3): both wins, each under its wallet.
    const wins = await admin('/admin/api/big-wins', { player_id: playerId });
    expect((wins.body.wins as { win: { wallet: string } }[]).map((w) => w.win.wallet)).toEqual(['casino-a', 'casino-b']);
    const overview = await admin('/admin/api/overview');
    expect((overview.body.wallets as { wallet: string }[]).map((w) => w.wallet)).toEqual(['casino-a', 'casino-b']);
    const perWallet = overview.body.wallets as { wallet: string; dead: number }[];
    expect(overview.body.dead).toBe(perWallet[0]!.dead + perWallet[1]!.dead);
    expect(perWallet[1]!.dead).toBeGreaterThanOrEqual(1);
  });

  it('an action without a wallet on an id two wallets hold does nothing and answers 409 AMBIGUOUS_TRANSACTION', async () => {
    const { winId } = await sameIdsInBothWallets();
    const res = await act(`/admin/api/transactions/${encodeURIComponent(winId)}/redrive`, { note: 'which one?' });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('AMBIGUOUS_TRANSACTION');
    expect((await storeOf('casino-a').get(winId))!.state).toBe('dead');
    expect((await storeOf('casino-b').get(winId))!.state).toBe('dead');
  });

  it('a wallet the registry lacks is 404 WALLET_NOT_FOUND; a malformed one 400 naming `wallet`', async () => {
    const window = { from: '0', to: String(Date.now()) };
    for (const path of ['/admin/api/transactions', '/admin/transactions-list', '/admin/tokens', '/admin/api/audit', '/admin/api/export', '/admin/tx?id=x']) {
      const query = path.endsWith('export') ? window : {};
      const unknown = await admin(path, { ...query, wallet: 'casino-z' });
      expect([path, unknown.status, unknown.body.error?.code]).toEqual([path, 404, 'WALLET_NOT_FOUND']);
      const bad = await admin(path, { ...query, wallet: 'Casino B' });
      expect([path, bad.status]).toEqual([path, 400]);
      expect(bad.status).toBe(400);
      expect(bad.body.error.fields).toEqual([expect.objectContaining({ field: 'wallet' })]);
    }
  });
});

describe("actions on the second wallet's record", () => {
  it("re-check asks casino-b's wallet, resolve and redrive move casino-b's records, and each is audited in casino-b's trail only", async () => {
    const playerId = newPlayerId();
    const sessionId = await launch('casino-b', uniqueId('tok'), playerId);
    const first = { sessionId, roundId: uniqueId('r'), betId: uniqueId('b'), winId: uniqueId('w') };
    const second = { sessionId, roundId: uniqueId('r'), betId: uniqueId('b'), winId: uniqueId('w') };
    await deadWin('casino-b', first, { bet: '1.00', win: '2.00' });
    await deadWin('casino-b', second, { bet: '1.00', win: '2.00' });

    // The page's form (it names the wallet): the status call goes to casino-b's simulator, signed as casino-b.
    const statusAtA = simA.walletCalls().filter((c) => c.operation === 'status').length;
    const recheck = await act(`/admin/tx/recheck?id=${encodeURIComponent(first.winId)}&wallet=casino-b`, { note: 'asked casino b' });
    expect(recheck.status).toBe(200);
    // 34: casino-b never took the refused credit; its credentials and HMAC-SHA512 signature were accepted (not 101/102).
    expect(recheck.text).toContain('The wallet said: rejected 34');
    expect(simB.walletCalls().filter((c) => c.operation === 'status' && c.transactionId === first.winId)).toHaveLength(1);
    expect(simA.walletCalls().filter((c) => c.operation === 'status')).toHaveLength(statusAtA);

    const resolve = await act(`/admin/api/transactions/${encodeURIComponent(first.winId)}/resolve?wallet=casino-b`, { note: 'casino b support confirmed it', outcome: 'applied' });
    expect(resolve.status).toBe(200);
    expect(resolve.body).toMatchObject({ action: 'resolve-applied', target: first.winId, state_after: 'succeeded', transaction: { wallet: 'casino-b' } });
    expect((await storeOf('casino-b').get(first.winId))!.state).toBe('succeeded');

    // Without `wallet`: the id is held by casino-b alone, so the action runs there.
    const redrive = await act(`/admin/api/transactions/${encodeURIComponent(second.winId)}/redrive`, { note: 'wallet b back up' });
    expect(redrive.status).toBe(200);
    expect(redrive.body).toMatchObject({ action: 'redrive', state_before: 'dead', state_after: 'pending', transaction: { wallet: 'casino-b' } });
    expect((await storeOf('casino-b').get(second.winId))!.state).toBe('pending');

    const trailB = await admin('/admin/api/audit', { wallet: 'casino-b' });
    const entriesB = trailB.body.entries as { wallet: string; transactionId: string; action: string; user: string; note: string }[];
    expect(entriesB.filter((e) => e.transactionId === first.winId).map((e) => e.action)).toEqual(['resolve-applied', 'recheck']);
    expect(entriesB.filter((e) => e.transactionId === second.winId).map((e) => [e.wallet, e.action, e.user, e.note])).toEqual([['casino-b', 'redrive', ADMIN.user, 'wallet b back up']]);
    const trailA = await admin('/admin/api/audit', { wallet: 'casino-a' });
    expect((trailA.body.entries as { transactionId: string }[]).filter((e) => e.transactionId === first.winId || e.transactionId === second.winId)).toEqual([]);
    const auditPage = await admin('/admin/audit');
    expect(auditPage.text).toContain(`<tr data-audit data-wallet="casino-b">`);

    // The record's own page shows its audit rows and the wallet.
    const detail = await admin('/admin/tx', { id: first.winId });
    expect(detail.status).toBe(200);
    expect(detail.text).toContain('<dt>Wallet</dt><dd>casino-b</dd>');
    expect(detail.text.match(/<tr data-audit data-wallet="casino-b">/g)).toHaveLength(2);
  });
});

describe('the reconciliation export', () => {
  const csvRows = (text: string): string[][] => text.trimEnd().split('\r\n').map(parseCsvLine);

  it('has a wallet column and a wallet filter; amounts and ids exact, formula-like ids neutralised in every wallet', async () => {
    const { winId, betId, playerId } = await sameIdsInBothWallets();
    const window = { from: String(startedAt), to: String(Date.now() + 1000), player_id: playerId };

    const csv = await admin('/admin/api/export', window);
    expect(csv.status).toBe(200);
    const [header, ...rows] = csvRows(csv.text);
    expect(header!.slice(0, 2)).toEqual(['wallet', 'transaction_id']);
    const col = (name: string) => header!.indexOf(name);
    const pick = (r: string[]) => [r[col('wallet')], r[col('transaction_id')], r[col('kind')], r[col('amount')], r[col('player_id')]];
    // Wallets one after the other in the registry's order, each oldest first.
    expect(rows.map(pick)).toEqual([
      ['casino-a', betId, 'debit', '1.00', playerId],
      ['casino-a', `'${winId}`, 'credit', '4.00', playerId],
      ['casino-b', betId, 'debit', '2.00', playerId],
      ['casino-b', `'${winId}`, 'credit', '6.00', playerId],
    ]);
    expect(rows.every((r) => r[col('round_id')]!.startsWith("'=1+2;"))).toBe(true);

    const onlyB = await admin('/admin/api/export', { ...window, wallet: 'casino-b' });
    expect(onlyB.headers['content-disposition']).toContain('transactions-casino-b-');
    expect(csvRows(onlyB.text).slice(1).map((r) => r[0])).toEqual(['casino-b', 'casino-b']);

    const json = await admin('/admin/api/export', { ...window, wallet: 'casino-b', format: 'json' });
    const parsed = JSON.parse(json.text) as Record<string, string>[];
    expect(parsed.map((r) => [r.wallet, r.transaction_id, r.amount, r.player_id, r.round_id?.startsWith('=1+2;')])).toEqual([
      ['casino-b', betId, '2.00', playerId, true],
      ['casino-b', winId, '6.00', playerId, true],
    ]);

    const page = await admin('/admin/export');
    expect(page.text).toContain('<select name="wallet"><option value="" selected>all wallets</option>');
  });
});

it('no secret on any page, answer or export the tests read', async () => {
  for (const path of ['/admin', '/admin/stale-rounds', '/admin/big-wins', '/admin/tokens', '/admin/audit', '/admin/export', '/admin/api/wallets']) {
    expect((await admin(path)).status).toBe(200);
  }
  expect(seen.length).toBeGreaterThan(20);
  const text = seen.join('\n');
  for (const secret of SECRETS) expect(text).not.toContain(secret);
  for (const secret of SECRETS) expect(logs.logs.join('')).not.toContain(secret);
});
