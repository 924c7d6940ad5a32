import request from 'supertest';
import { UNKNOWN_ID_ENTRIES } from '../../src/store/audit';
import { Code } from '../../src/wallet/codes';
import { parseCsvLine } from '../support/csv';
import { basicAuth } from '../support/wired-gateway';
import { engine, launch, startHarness, uniqueId, type Harness } from '../support/gateway-harness';

/**
 * The operators' money console through the real gateway (startGateway) over real Redis and the
 * simulator: its refusals (no credentials, another origin), the resolve action's one-time step
 * and audit entry, and the reconciliation export checked against the records.
 */
const ADMIN = { user: 'ops', password: 'ops-password-123' };
const auth = basicAuth(ADMIN.user, ADMIN.password);
let h: Harness;

beforeAll(async () => {
  h = await startHarness({ label: 'console', env: { ADMIN_USER: ADMIN.user, ADMIN_PASSWORD: ADMIN.password, BIG_WIN_MULTIPLIER: '10' } });
});

afterAll(async () => {
  await h?.close();
});

afterEach(() => h.sim.faults.clear());

/** A bet and a win of one round; the win's first answer given by `winCode` (a retry code leaves it pending). */
async function round(sessionId: string, amounts: { bet: string; win: string }, winCode?: number) {
  const roundId = uniqueId('r');
  const betId = uniqueId('b');
  const winId = uniqueId('w');
  expect((await engine(h, `/sessions/${sessionId}/bet`, { round_id: roundId, transaction_id: betId, amount: amounts.bet })).status).toBe(200);
  if (winCode !== undefined) h.sim.faults.failNext('credit', 1, winCode, { transactionId: winId });
  await engine(h, `/sessions/${sessionId}/win`, { round_id: roundId, transaction_id: winId, bet_transaction_id: betId, amount: amounts.win });
  return { roundId, betId, winId };
}

/** Makes a pending record dead the way exhausted retries leave it. */
async function kill(id: string): Promise<void> {
  const record = (await h.transactions.get(id))!;
  expect(await h.transactions.settle(record, { state: 'dead', expect: ['pending'], note: 'retries exhausted' })).toBe(true);
}

const ACTIONS = ['redrive', 'recheck', 'resolve'];

describe('refusals', () => {
  it.each(ACTIONS)('refuses %s without credentials (401), on the API and the page form', async (action) => {
    for (const path of [`/admin/api/transactions/x/${action}`, `/admin/tx/${action}?id=x`]) {
      const res = await request(h.url).post(path).type('form').send({ note: 'a note', outcome: 'applied' }).expect(401);
      expect(res.headers['www-authenticate']).toMatch(/^Basic/);
    }
  });

  it.each(ACTIONS)('refuses %s from another origin (403) even with credentials, and changes nothing', async (action) => {
    const { sessionId } = await launch(h);
    const { winId } = await round(sessionId, { bet: '1.00', win: '2.00' }, Code.InternalServiceError);
    await kill(winId);
    for (const path of [`/admin/api/transactions/${winId}/${action}`, `/admin/tx/${action}?id=${winId}`]) {
      const bySite = await request(h.url).post(path).set('Authorization', auth).set('Sec-Fetch-Site', 'cross-site').type('form').send({ note: 'a note', outcome: 'applied' });
      expect(bySite.status).toBe(403);
      expect(bySite.body.error.code).toBe('CROSS_ORIGIN_REFUSED');
      const byOrigin = await request(h.url).post(path).set('Authorization', auth).set('Origin', 'https://evil.example').send({ note: 'a note', outcome: 'applied' });
      expect(byOrigin.status).toBe(403);
    }
    expect((await h.transactions.get(winId))!.state).toBe('dead');
  });

  it('refuses an action without a note (400 naming it)', async () => {
    const res = await request(h.url).post('/admin/api/transactions/x/resolve').set('Authorization', auth).send({ outcome: 'applied' }).expect(400);
    expect(res.body.error.fields).toEqual([expect.objectContaining({ field: 'note' })]);
  });

  it('serves every page only with credentials, not framable, not sniffed, and running no script', async () => {
    for (const path of ['/admin', '/admin/transactions-list?state=dead', '/admin/stale-rounds', '/admin/big-wins', '/admin/tokens', '/admin/audit', '/admin/export', '/admin/api/overview']) {
      await request(h.url).get(path).expect(401);
      const res = await request(h.url).get(path).set('Authorization', auth).expect(200);
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      if (path.startsWith('/admin/api/')) continue;
      expect(res.text).not.toContain('<script');
      expect(res.headers['content-security-policy']).toMatch(/(^|; )script-src 'none'(;|$)/);
      expect(res.headers['content-security-policy']).toMatch(/(^|; )default-src 'none'(;|$)/);
    }
  });
});

describe('without a ledger', () => {
  it('answers the history API 404 saying no ledger is kept, after checking its input', async () => {
    for (const path of ['/admin/api/history/transactions', '/admin/api/history/transactions/x', '/admin/api/history/rounds/r?wallet=default']) {
      const res = await request(h.url).get(path).set('Authorization', auth).expect(404);
      expect(res.body.error).toMatchObject({ code: 'NOT_FOUND', message: expect.stringContaining('no ledger: DATABASE_URL is unset') });
    }
    const bad = await request(h.url).get('/admin/api/history/rounds/r?wallet=Not_A_Wallet').set('Authorization', auth).expect(400);
    expect(bad.body.error.fields).toEqual([expect.objectContaining({ field: 'wallet' })]);
  });
});

describe('resolve', () => {
  it('resolves a dead win once, without a wallet call, releasing its token and round, with an audit entry', async () => {
    const { sessionId } = await launch(h);
    const { winId, roundId } = await round(sessionId, { bet: '1.00', win: '3.00' }, Code.InternalServiceError);
    await kill(winId);
    const record = (await h.transactions.get(winId))!;
    expect(await h.redis.sismember(h.keys.tokenPending(record.tokenRef), winId)).toBe(1);
    expect(await h.redis.hget(h.keys.round(record.playerId, record.siteId, record.walletRoundId), 'open')).toBe('1');
    const attemptLog = await h.transactions.attemptLog({ ...record, transactionId: winId });
    expect(attemptLog).toEqual([expect.objectContaining({ result: Code.InternalServiceError, latencyMs: expect.any(Number) })]);
    // Money calls only: the gateway's breaker may check the wallet's health meanwhile (a loaded box).
    const callsBefore = h.sim.walletCalls().length;

    const first = await request(h.url).post(`/admin/api/transactions/${winId}/resolve`).set('Authorization', auth).send({ note: 'seen in the wallet ledger', outcome: 'applied' }).expect(200);
    expect(first.body).toMatchObject({ action: 'resolve-applied', state_before: 'dead', state_after: 'succeeded', transaction: { state: 'succeeded', last_wallet_code: 1, resolution: 'applied' } });
    const again = await request(h.url).post(`/admin/api/transactions/${winId}/resolve`).set('Authorization', auth).send({ note: 'twice', outcome: 'not_applied' }).expect(409);
    expect(again.body.error.code).toBe('NOT_DEAD');

    expect(h.sim.walletCalls().slice(callsBefore).map((c) => c.operation)).toEqual([]);
    expect(await h.redis.sismember(h.keys.tokenPending(record.tokenRef), winId)).toBe(0);
    expect(await h.redis.hget(h.keys.round(record.playerId, record.siteId, record.walletRoundId), 'open')).toBe('0');
    expect(await h.redis.zscore(h.keys.deadIndex(), winId)).toBeNull();
    expect(await h.redis.exists(h.keys.attemptLog(winId))).toBe(0);

    const audit = await request(h.url).get('/admin/api/audit').set('Authorization', auth).expect(200);
    const mine = audit.body.entries.filter((e: { transactionId: string }) => e.transactionId === winId);
    expect(mine.map((e: { action: string; result: string; stateBefore: string; stateAfter: string; user: string; note: string }) => [e.action, e.result, e.stateBefore, e.stateAfter, e.user, e.note])).toEqual([
      ['resolve-not-applied', 'not_dead', 'succeeded', 'succeeded', 'ops', 'twice'],
      ['resolve-applied', 'resolved', 'dead', 'succeeded', 'ops', 'seen in the wallet ledger'],
    ]);
    expect(h.logs.some((l) => l.includes('"action":"resolve-applied"') && l.includes(winId))).toBe(true);

    const detail = await request(h.url).get(`/admin/api/transactions/${winId}`).set('Authorization', auth).expect(200);
    expect(detail.body.round.map((r: { transaction_id: string }) => r.transaction_id)).toHaveLength(2);
    expect(detail.body.round[0].round_id).toBe(roundId);
  });

  it('a dead bet is resolved through its compensation: its page asks about the stake, the audit rows name the compensation', async () => {
    const { sessionId } = await launch(h);
    const debitId = uniqueId('b');
    // Applied at the wallet, answer lost: refused to the engine, compensated; the compensation dies, the bet with it.
    h.sim.faults.applyThenDrop('debit', 1, { mode: 'reset', transactionId: debitId });
    expect((await engine(h, `/sessions/${sessionId}/bet`, { round_id: uniqueId('r'), transaction_id: debitId, amount: '4.00' })).status).toBe(503);
    const compensation = (await h.transactions.get((await h.transactions.get(debitId))!.compensationId!))!;
    expect(await h.transactions.settle(compensation, { state: 'dead', expect: ['pending'], note: 'retries exhausted', debitState: 'dead' })).toBe(true);

    const page = await request(h.url).get('/admin/tx').query({ id: debitId }).set('Authorization', auth).expect(200);
    expect(page.text).toContain('The stake is back with the player');
    expect(page.text).toContain('This rollback did not happen');
    expect(page.text).toContain('The bet itself was never applied');
    expect(page.text).not.toContain('Applied at the wallet → succeeded');

    await request(h.url).post(`/admin/api/transactions/${debitId}/resolve`).set('Authorization', auth).send({ note: 'refunded at the wallet', outcome: 'applied' }).expect(200);
    expect(await h.transactions.get(debitId)).toMatchObject({ state: 'compensated' });
    const trail = await request(h.url).get('/admin/audit').set('Authorization', auth).expect(200);
    const row = trail.text.split('<tr data-audit>').find((r) => r.includes(`/admin/tx?id=${encodeURIComponent(debitId)}`)) ?? '';
    expect(row).toContain(`compensation <a href="/admin/tx?id=${encodeURIComponent(compensation.transactionId)}&#38;wallet=default"`);
    expect(row).toContain('dead → succeeded');
  });

  it('opens and acts on the transactions `.` and `..` through the links and forms a browser follows', async () => {
    const { sessionId, playerId } = await launch(h);
    const roundId = uniqueId('r');
    // Transaction ids are the engine's: `.` and `..` are valid ones.
    const ids = { bet: '..', win: '.' };
    expect((await engine(h, `/sessions/${sessionId}/bet`, { round_id: roundId, transaction_id: ids.bet, amount: '1.00' })).status).toBe(200);
    h.sim.faults.failNext('credit', 1, Code.InternalServiceError, { transactionId: ids.win });
    await engine(h, `/sessions/${sessionId}/win`, { round_id: roundId, transaction_id: ids.win, bet_transaction_id: ids.bet, amount: '2.00' });
    await kill(ids.win);
    const list = await request(h.url).get(`/admin/players/${playerId}`).query({ site_id: '7' }).set('Authorization', auth).expect(200);
    for (const id of [ids.bet, ids.win]) {
      const href = new RegExp(`<a href="([^"]+)">${id.replace(/\./g, '\\.')}</a>`).exec(list.text)?.[1];
      expect(href).toBeDefined();
      // What a browser requests for the link: the WHATWG URL parser resolves `.` and `..` segments.
      const url = new URL(href!, h.url);
      const page = await request(h.url).get(url.pathname + url.search).set('Authorization', auth).expect(200);
      expect(page.text).toContain(`Transaction ${id}<`);
    }
    const detail = await request(h.url).get('/admin/tx').query({ id: ids.win }).set('Authorization', auth).expect(200);
    const action = /<form method="post" action="([^"]+)"[^>]*><strong id="note-redrive-title">/.exec(detail.text)?.[1];
    expect(action).toBeDefined();
    const target = new URL(action!.replace(/&amp;/g, '&'), h.url);
    await request(h.url).post(target.pathname + target.search).set('Authorization', auth).type('form').send({ note: 'sent again' }).expect(200);
    expect((await h.transactions.get(ids.win))!.state).not.toBe('dead');
  });

  it('keeps at most a minute\'s share of audit entries for unknown ids; the rest are refused the same, and real actions are still audited', async () => {
    await h.redis.del(h.keys.auditUnknown());
    const flood = uniqueId('made-up');
    const { limit } = UNKNOWN_ID_ENTRIES;
    for (let i = 0; i < limit + 40; i += 1) {
      await request(h.url).post(`/admin/api/transactions/${flood}-${i}/redrive`).set('Authorization', auth).send({ note: 'a made-up id' }).expect(404);
    }
    const trail = await h.redis.xrevrange(h.keys.audit(), '+', '-', 'COUNT', 10 * limit);
    const kept = trail.filter(([, fields]) => fields.some((f) => f.startsWith(`${flood}-`)));
    expect(kept).toHaveLength(limit);

    const { sessionId } = await launch(h);
    const { winId } = await round(sessionId, { bet: '1.00', win: '2.00' }, Code.InternalServiceError);
    await kill(winId);
    await request(h.url).post(`/admin/api/transactions/${winId}/redrive`).set('Authorization', auth).send({ note: 'a real one' }).expect(200);
    const [newest] = await h.redis.xrevrange(h.keys.audit(), '+', '-', 'COUNT', 1);
    expect(newest?.[1]).toEqual(expect.arrayContaining(['transaction_id', winId, 'result', 'redriven']));
  });

  it('"not applied" makes a dead win failed with resolution not_applied', async () => {
    const { sessionId } = await launch(h);
    const { winId } = await round(sessionId, { bet: '1.00', win: '3.00' }, Code.InternalServiceError);
    await kill(winId);
    const res = await request(h.url).post(`/admin/api/transactions/${winId}/resolve`).set('Authorization', auth).send({ note: 'the wallet never saw it', outcome: 'not_applied' }).expect(200);
    expect(res.body.transaction).toMatchObject({ state: 'failed', resolution: 'not_applied' });
  });
});

describe('lists', () => {
  it('lists dead transactions by player and flags big wins over the multiplier', async () => {
    const { sessionId, playerId } = await launch(h);
    const { winId } = await round(sessionId, { bet: '1.00', win: '12.00' }, Code.InternalServiceError);
    await kill(winId);
    const dead = await request(h.url).get('/admin/api/transactions').query({ state: 'dead', player_id: playerId }).set('Authorization', auth).expect(200);
    expect(dead.body.transactions.map((t: { transaction_id: string }) => t.transaction_id)).toEqual([winId]);
    const wins = await request(h.url).get('/admin/api/big-wins').query({ player_id: playerId }).set('Authorization', auth).expect(200);
    expect(wins.body.wins).toEqual([expect.objectContaining({ over: ['multiplier'], win: expect.objectContaining({ transaction_id: winId }) })]);
    const bad = await request(h.url).get('/admin/api/transactions').query({ state: 'nope' }).set('Authorization', auth).expect(400);
    expect(bad.body.error.fields[0].field).toBe('state');
  });
});

describe('reconciliation export', () => {
  it('exports a window as CSV that matches the records, amounts as exact text', async () => {
    const from = Date.now();
    const { sessionId, playerId } = await launch(h, { siteId: '9' });
    const ids: string[] = [];
    for (const amounts of [{ bet: '1.10', win: '0.30' }, { bet: '2.05', win: '100.01' }]) {
      const r = await round(sessionId, amounts);
      ids.push(r.betId, r.winId);
    }
    const to = Date.now();
    const res = await request(h.url)
      .get('/admin/api/export')
      .query({ from: new Date(from).toISOString(), to: new Date(to).toISOString(), player_id: playerId, format: 'csv', status: '1' })
      .set('Authorization', auth)
      .buffer(true)
      .parse((r, cb) => {
        let text = '';
        r.on('data', (c: Buffer) => (text += c.toString('utf8')));
        r.on('end', () => cb(null, text));
      })
      .expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/csv/);
    const [header, ...rows] = (res.body as string).trimEnd().split('\r\n').map(parseCsvLine);
    const at = (name: string) => header!.indexOf(name);
    expect(rows.map((r) => r[at('transaction_id')])).toEqual(ids);
    for (const row of rows) {
      const record = (await h.transactions.get(row[at('transaction_id')]!))!;
      expect(row[at('amount')]).toBe(record.amount);
      expect(row[at('state')]).toBe(record.state);
      expect(row[at('kind')]).toBe(record.kind);
      expect(row[at('player_id')]).toBe(playerId);
      expect(row[at('site_id')]).toBe('9');
      expect(row[at('round_id')]).toBe(record.roundId);
      expect(row[at('wallet_status')]).toBe('ok');
      expect(row[at('wallet_code')]).toBe('1');
    }
    expect(rows.map((r) => r[at('amount')])).toEqual(['1.10', '0.30', '2.05', '100.01']);
  });

  it('leaves no cell a spreadsheet could read as a formula, wherever in a field a trigger follows a separator', async () => {
    const from = Date.now();
    const { sessionId, playerId } = await launch(h);
    const roundId = `${uniqueId('r')};=1+2;y`;
    const betId = `${uniqueId('b')},@SUM(1)|-2`;
    const winId = `${uniqueId('w')}\t+3; "=HYPERLINK(1)`;
    expect((await engine(h, `/sessions/${sessionId}/bet`, { round_id: roundId, transaction_id: betId, amount: '1.00' })).status).toBe(200);
    expect((await engine(h, `/sessions/${sessionId}/win`, { round_id: roundId, transaction_id: winId, bet_transaction_id: betId, amount: '2.00' })).status).toBe(200);
    const res = await request(h.url)
      .get('/admin/api/export')
      .query({ from: new Date(from).toISOString(), to: new Date(Date.now()).toISOString(), player_id: playerId, format: 'csv' })
      .set('Authorization', auth)
      .expect(200);
    const [header, ...rows] = res.text.trimEnd().split('\r\n').map(parseCsvLine);
    const at = (name: string) => header!.indexOf(name);
    expect(rows).toHaveLength(2);
    // Every cell as a spreadsheet that splits on , ; | or a tab sees it, spaces and quotes before it trimmed.
    const cells = rows.flat().flatMap((field) => field.split(/[,;|\t\r\n]/)).map((cell) => cell.replace(/^[ "]+/, ''));
    expect(cells.filter((cell) => /^[=+\-@]/.test(cell) && !/^-?[0-9.]+$/.test(cell))).toEqual([]);
    // The text is all there: each cell that could start a formula only got a ' in front.
    expect(rows.map((r) => r[at('transaction_id')]!.replace(/'(?=[=+\-@\t])/g, ''))).toEqual([betId, winId]);
    expect(rows[0]![at('round_id')]).toBe(roundId.replace(';=', ";'="));
  });

  it('streams JSON too, and refuses a window without its ends', async () => {
    await request(h.url).get('/admin/api/export').set('Authorization', auth).expect(400);
    const res = await request(h.url).get('/admin/api/export').query({ from: '0', to: String(Date.now()), format: 'json' }).set('Authorization', auth).expect(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['content-disposition']).toMatch(/\.json"$/);
    expect(res.text).toMatch(/^\[(\n\{.*\},)*(\n\{.*\})?\n\]\n$/);
    expect(Array.isArray(JSON.parse(res.text))).toBe(true);
  });
});
