import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../../src/lib/wait-for';
import type { LedgerDb } from '../../src/ledger/db';
import { LEDGER_GROUP } from '../../src/ledger/drain';
import { migrate } from '../../src/ledger/migrate';
import { rowOf, type ChangeRow } from '../../src/ledger/rows';
import { writeBatch } from '../../src/ledger/writer';
import { walletLayout } from '../../src/registry/wallet-layout';
import { Code } from '../../src/wallet/codes';
import type { RunningWorker } from '../../workers/worker';
import { ledgerHarness, type LedgerHarness } from '../support/ledger-db';
import { newId, type Harness, type Player } from '../support/worker-harness';

/**
 * The ledger's outbox (contract 12): every record change goes to the shard's outbox in the Lua
 * step that makes it, and workers drain it into PostgreSQL exactly once per change.
 */
let ledger: LedgerHarness;
let db: LedgerDb;
let h: Harness;
let worker: RunningWorker;
let player: Player;

interface Change {
  transaction_id: string;
  change_no: number;
  state: string;
  amount: string;
  player_id: string;
  attempts: number;
  last_wallet_code: number | null;
  wallet: string;
}

const changesOf = async (id: string): Promise<Change[]> =>
  (await db.query<Change>('SELECT wallet, transaction_id, change_no, state, amount::text, player_id::text, attempts, last_wallet_code FROM ledger_changes WHERE transaction_id = $1 ORDER BY change_no', [id])).rows;

const outboxKey = (): string => h.store.layout.keys(0).ledgerOutbox();

beforeAll(async () => {
  ledger = await ledgerHarness({ label: 'ledger', env: { LEDGER_CLAIM_IDLE_MS: '500' } });
  ({ h, worker, db } = ledger);
  player = await h.newPlayer();
}, 60_000);

afterAll(async () => {
  await ledger?.close();
});

afterEach(() => h.sim.faults.clear());

it('writes every change of a retried win once, in order, with the exact amount and player id, and empties the outbox', async () => {
  const bet = await h.bet(player, '10.10');
  const id = newId('credit');
  h.sim.faults.failNext('credit', 2, Code.InternalServiceError, { transactionId: id });
  expect((await h.settleInline(player, 'credit', bet, { id, amount: '25.07' })).next).toBe('retry');
  await h.inState(id, 'succeeded', 20_000);

  const changes = await waitFor('the win settled in the ledger', async () => {
    const rows = await changesOf(id);
    return rows.at(-1)?.state === 'succeeded' ? rows : undefined;
  }, 20_000);
  expect(changes.map((c) => c.change_no)).toEqual(changes.map((_, i) => i + 1));
  expect(changes.at(-1)).toMatchObject({ wallet: 'default', state: 'succeeded', amount: '25.07', player_id: player.fields.player_id, attempts: 3, last_wallet_code: Code.Success });
  expect(changes[0]).toMatchObject({ state: 'pending', attempts: 0 });
  const [newest] = (await db.query('SELECT change_no, state FROM ledger_transactions WHERE transaction_id = $1', [id])).rows;
  expect(newest).toEqual({ change_no: changes.length, state: 'succeeded' });
  expect(await changesOf(bet.transactionId)).toEqual(expect.arrayContaining([expect.objectContaining({ state: 'succeeded', amount: '10.10' })]));
  await waitFor('the outbox drained', async () => ((await h.redis.xlen(outboxKey())) === 0 ? true : undefined), 10_000);
});

it('replays entries a dead reader wrote but never acknowledged: taken over, nothing written twice', async () => {
  await worker.close();
  const bet = await h.bet(player, '3.00');
  // A reader that read the entries, committed their rows, and died before its XACK.
  const read = (await h.redis.xreadgroup('GROUP', LEDGER_GROUP, 'dead-reader', 'COUNT', 100, 'STREAMS', outboxKey(), '>')) as [string, [string, string[]][]][];
  const entries = read[0]![1];
  expect(entries.length).toBeGreaterThan(0);
  const rows = entries.map(([entryId, flat]) => rowOf('default', 0, entryId, flat)!).filter((r) => r.type === 'change').map((r) => r.row as ChangeRow);
  await writeBatch(db, rows, [], 0, new Set());

  worker = await h.startWorker();
  await waitFor('the dead reader\'s entries taken over and acknowledged', async () => {
    const [count] = (await h.redis.xpending(outboxKey(), LEDGER_GROUP)) as [number];
    return count === 0 && (await h.redis.xlen(outboxKey())) === 0 ? true : undefined;
  }, 15_000);
  const changes = await changesOf(bet.transactionId);
  expect(changes.map((c) => c.change_no)).toEqual(changes.map((_, i) => i + 1));
  expect(changes.at(-1)).toMatchObject({ state: 'succeeded', amount: '3.00' });
});

it('applies its migrations once however many processes start together', async () => {
  const results = await Promise.all([migrate(db), migrate(db), migrate(db)]);
  expect(results.flat()).toEqual([]);
  const { rows } = await db.query('SELECT version FROM ledger_migrations ORDER BY version');
  expect(rows.map((r: { version: number }) => r.version)).toEqual([1]);
});

it('drops a month whole once it is past LEDGER_RETENTION_DAYS (400), and keeps the months after it', async () => {
  const [sample] = (await db.query<{ outbox_id: string }>('SELECT outbox_id FROM ledger_changes LIMIT 1')).rows;
  expect(sample).toBeDefined();
  const DAY = 86_400_000;
  const old = Date.now() - 430 * DAY;
  const kept = Date.now() - 380 * DAY;
  const row = (id: string, createdAt: number): ChangeRow => ({
    wallet: 'default', transactionId: id, changeNo: 1, createdAt, changedAt: createdAt, kind: 'debit', state: 'succeeded', amount: '18446744073709551615.01',
    currency: 'EUR', playerId: '18446744073709551615', siteId: '1', sessionId: 's', roundId: 'r', walletRoundId: 'r', referenceId: null, isCompensation: false, compensationId: null,
    attempts: 1, lastWalletCode: 1, walletRequestId: null, engineRequestId: null, balance: null, error: null, resolution: null, note: null, outboxId: `0:${id}`,
  });
  await writeBatch(db, [row('old-1', old), row('kept-1', kept)], [], 0, new Set());
  const exact = await db.query<{ amount: string; player_id: string }>("SELECT amount::text, player_id::text FROM ledger_changes WHERE transaction_id = 'kept-1'");
  expect(exact.rows).toEqual([{ amount: '18446744073709551615.01', player_id: '18446744073709551615' }]);

  const dropped = await worker.ledger!.applyRetention();
  expect(dropped.length).toBeGreaterThanOrEqual(3);
  expect(dropped.every((name) => /_y\d{4}m\d{2}$/.test(name))).toBe(true);
  const left = await db.query<{ transaction_id: string }>("SELECT transaction_id FROM ledger_changes WHERE transaction_id IN ('old-1', 'kept-1')");
  expect(left.rows).toEqual([{ transaction_id: 'kept-1' }]);
});

it("names the engine call's request id in every change of its record, a worker's retries included", async () => {
  const engine = (path: 'bet' | 'win', body: Record<string, unknown>, requestId: string) =>
    fetch(`${h.url}/engine/v1/sessions/${player.session.sessionId}/${path}`, {
      method: 'POST',
      headers: { authorization: 'Bearer worker-harness-engine-key', 'content-type': 'application/json', 'x-request-id': requestId },
      body: JSON.stringify(body),
    });
  const round = randomUUID();
  const betId = `b-${randomUUID().slice(0, 30)}`;
  const winId = newId('credit');
  expect((await engine('bet', { round_id: round, transaction_id: betId, amount: 2 }, 'engine-call-of-the-bet')).status).toBe(200);
  h.sim.faults.failNext('credit', 2, Code.InternalServiceError, { transactionId: winId });
  expect((await engine('win', { round_id: round, transaction_id: winId, bet_transaction_id: betId, amount: 5 }, 'engine-call-of-the-win')).status).toBeLessThan(300);
  const rowsOf = (id: string) => db.query<{ change_no: number; state: string; engine_request_id: string | null }>('SELECT change_no, state, engine_request_id FROM ledger_changes WHERE transaction_id = $1 ORDER BY change_no', [id]);
  const win = await waitFor('the retried win settled in the ledger', async () => {
    const { rows } = await rowsOf(winId);
    return rows.at(-1)?.state === 'succeeded' ? rows : undefined;
  }, 20_000);
  // The claim, the failed inline attempt, the worker's retries and their settle: each names the win's engine call.
  expect(win.length).toBeGreaterThanOrEqual(4);
  expect(win.map((r) => r.engine_request_id)).toEqual(win.map(() => 'engine-call-of-the-win'));
  const bet = await waitFor('the bet settled in the ledger', async () => {
    const { rows } = await rowsOf(betId);
    return rows.at(-1)?.state === 'succeeded' ? rows : undefined;
  }, 10_000);
  expect(bet.map((r) => r.engine_request_id)).toEqual(bet.map(() => 'engine-call-of-the-bet'));
  const [newest] = (await db.query('SELECT engine_request_id FROM ledger_transactions WHERE transaction_id = $1', [winId])).rows;
  expect(newest).toEqual({ engine_request_id: 'engine-call-of-the-win' });
});

it('removes consumers gone for long from the group, never one holding entries: those are claimed and written first', async () => {
  await worker.close();
  // Two workers gone: one left nothing pending, one died holding entries it had read.
  await h.redis.xgroup('CREATECONSUMER', outboxKey(), LEDGER_GROUP, 'gone-empty');
  const bet = await h.bet(player, '4.04');
  const read = (await h.redis.xreadgroup('GROUP', LEDGER_GROUP, 'gone-holding', 'COUNT', 100, 'STREAMS', outboxKey(), '>')) as [string, [string, string[]][]][];
  expect(read[0]![1].length).toBeGreaterThan(0);
  worker = await h.startWorker({ LEDGER_CLAIM_IDLE_MS: '200' });
  const consumers = async (): Promise<{ name: string; pending: number }[]> =>
    ((await h.redis.xinfo('CONSUMERS', outboxKey(), LEDGER_GROUP)) as (string | number)[][]).map((c) => ({ name: String(c[1]), pending: Number(c[3]) }));
  const left = await waitFor('only the running worker left in the group', async () => {
    const now = await consumers();
    return now.length === 1 ? now : undefined;
  }, 20_000);
  expect(left[0]!.name).not.toMatch(/^gone-/);
  const changes = await waitFor('the entries the gone worker held written', async () => {
    const rows = await changesOf(bet.transactionId);
    return rows.at(-1)?.state === 'succeeded' ? rows : undefined;
  }, 10_000);
  expect(changes.map((c) => c.change_no)).toEqual(changes.map((_, i) => i + 1));
  expect(changes.at(-1)).toMatchObject({ amount: '4.04' });
});

it('drains the outbox of a wallet a registry reload adds, without a restart', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'wgw-ledger-registry-'));
  const file = join(dir, 'wallets.json');
  const entry = (id: string) => ({
    id,
    base_url: h.sim.url,
    basic_user: h.env.WALLET_BASIC_USER,
    basic_password: h.env.WALLET_BASIC_PASSWORD,
    signing_secret: h.env.WALLET_SIGNING_SECRET,
    provider_id: h.env.PROVIDER_ID,
    timeout_ms: 1000,
  });
  const registry = (ids: string[]) => writeFileSync(file, JSON.stringify({ wallets: ids.map(entry), engines: [{ id: 'studio', keys: ['worker-harness-engine-key'], wallets: ids }] }));
  try {
    registry(['default']);
    await worker.close();
    worker = await h.startWorker({ WALLETS_FILE: file });
    registry(['default', 'casino-new']);
    expect(await worker.reload()).toMatchObject({ ok: true, added: ['casino-new'] });
    // A change in the new wallet's outbox, as its claim would append it.
    const key = walletLayout({ QUEUE_PREFIX: h.prefix, redisShards: 1 }, 'casino-new').keys(0).ledgerOutbox();
    const id = `b-${randomUUID().slice(0, 30)}`;
    const now = String(Date.now());
    await h.redis.xadd(key, '*', 't', 'tx', 'id', id, 'change_no', '1', 'kind', 'debit', 'state', 'pending', 'amount', '6.06', 'currency', 'EUR', 'player_id', '1', 'site_id', '1',
      'session_id', 'casino-new~s', 'round_id', 'r', 'wallet_round_id', 'r', 'created_at', now, 'updated_at', now);
    const rows = await waitFor('the new wallet\'s change in the ledger', async () => {
      const found = await changesOf(id);
      return found.length > 0 ? found : undefined;
    }, 15_000);
    expect(rows).toEqual([expect.objectContaining({ wallet: 'casino-new', amount: '6.06', change_no: 1 })]);
    await waitFor('the new wallet\'s outbox drained', async () => ((await h.redis.xlen(key)) === 0 ? true : undefined), 10_000);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
