import { randomUUID } from 'node:crypto';
import type Redis from 'ioredis';
import { compensationFor } from '../../src/duties/compensation';
import { compensationTransactionId } from '../../src/duties/compensation-id';
import { retryPlan } from '../../src/duties/retry-policy';
import { keysFor } from '../../src/store/keys';
import { shardLayout } from '../../src/store/shards';
import { closeRedis, createRedis } from '../../src/store/redis';
import { createSessionStore, tokenRefOf, type SessionStore } from '../../src/store/sessions';
import { codedError } from '../../src/lib/error-codes';
import { createTransactionStore, type TransactionStore } from '../../src/store/transactions';
import { newRecordFields, pairsToObject } from '../../src/store/record-codec';
import { PLAYER_RECENT_CAP, trimsIndexes } from '../../src/store/record-indexes';
import { playerRecentRecords } from '../../src/store/record-scan';
import type { NewTransaction } from '../../src/store/types';
import { encodeRequest } from '../../src/wallet/protocol';
import { waitFor } from '../../src/lib/wait-for';
import { deletePrefix, redisUrl, testPrefix } from '../support/prefix';
import { DEFAULT_TOKEN_SESSION_CAP } from '../../src/config/env';
import { exactDecimal } from '../../src/lib/money';

const prefix = testPrefix('store');
let redis: Redis;
let sessions: SessionStore;
let txs: TransactionStore;
let sessionId: string;
const now = 1_700_000_000_000;

beforeAll(async () => {
  redis = createRedis(redisUrl());
  sessions = createSessionStore(redis, shardLayout(prefix, 1), 3600);
  txs = createTransactionStore(redis, shardLayout(prefix, 1), 3600, () => now);
  sessionId = ((await sessions.create({ token: 'tok', playerId: '18446744073709551615', siteId: '7', currency: 'EUR', gameId: 'g', balance: '100.00' }, now, DEFAULT_TOKEN_SESSION_CAP)).session!).sessionId;
});

afterAll(async () => {
  await deletePrefix(prefix);
  await closeRedis(redis);
});

function tx(kind: 'debit' | 'credit' | 'rollback', id: string, round: string, extra: Partial<NewTransaction> = {}): NewTransaction {
  const base = { token: 'tok', player_id: '18446744073709551615', site_id: '7', provider_id: '1', game_id: 'g', currency: 'EUR', amount: '5.00', round_id: round, transaction_id: id };
  const walletBody =
    kind === 'debit'
      ? encodeRequest('debit', { ...base, round_closed: false })
      : encodeRequest(kind, { ...base, reference_transaction_id: extra.referenceTransactionId ?? 'bet', round_closed: true });
  return {
    transactionId: id,
    kind,
    sessionId,
    tokenRef: tokenRefOf('tok'),
    playerId: '18446744073709551615',
    siteId: '7',
    roundId: round,
    walletRoundId: round,
    amount: '5.00',
    currency: 'EUR',
    roundClosed: kind !== 'debit',
    referenceTransactionId: null,
    bodyHash: `h-${id}`,
    walletOperation: kind,
    walletBody,
    isCompensation: false,
    createdAt: now,
    ...extra,
  };
}

const lease = () => ({ now, leaseUntil: now + 1000, checkAt: now + 2000, sessionsCheckAt: now + 60_000 });
const claim = (record: NewTransaction, exactAmount = exactDecimal(record.amount)) => txs.claim({ record, exactAmount, leaseUntil: now + 1000 });
/** A bet claimed and applied at the wallet: a win may follow it. */
async function betApplied(bet: NewTransaction): Promise<void> {
  expect((await claim(bet)).kind).toBe('claimed');
  expect(await txs.settle(bet, { state: 'succeeded', expect: ['pending'], attempts: 1, lastWalletCode: 1, history: [1], balance: '95.00' })).toBe(true);
}

/** The record's wallet body pieces (`body`, `body1`, …) as stored. */
async function bodyFieldsOf(id: string): Promise<string[]> {
  return Object.keys(await redis.hgetall(keysFor(prefix).transaction(id))).filter((f) => /^body\d*$/.test(f)).sort();
}

describe('session store', () => {
  it('serves a profile from memory, reads Redis on a miss and after the entry expired, and keeps the cache bounded', async () => {
    let clock = now;
    const reads: string[] = [];
    const spy = new Proxy(redis, {
      get(target, prop, receiver) {
        if (prop === 'hgetall') return (key: string) => (reads.push(key), target.hgetall(key));
        const value = Reflect.get(target, prop, receiver) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const store = createSessionStore(spy, shardLayout(prefix, 1), 3600, { maxEntries: 2, ttlMs: 1000 }, () => clock);
    const made = await Promise.all([1, 2, 3].map((i) => store.create({ token: `tok-p${i}`, playerId: String(i), siteId: '7', currency: 'EUR', gameId: 'g', balance: '1.00' }, now, DEFAULT_TOKEN_SESSION_CAP)));
    const [a, b, c] = made.map((m) => m.session!.sessionId) as [string, string, string];
    // the first one was trimmed (two entries at most): one read; the others come from memory
    expect((await store.profile(a))?.playerId).toBe('1');
    expect((await store.profile(c))?.token).toBe('tok-p3');
    expect(reads).toHaveLength(1);
    expect(await store.profile(b)).toMatchObject({ playerId: '2', tokenRef: tokenRefOf('tok-p2'), currency: 'EUR', gameId: 'g' });
    expect(reads).toHaveLength(2);
    clock += 1001;
    await store.profile(c);
    expect(reads).toHaveLength(3);
    expect(await store.profile('AAAAAAAAAAAAAAAAAAAAAA')).toBeUndefined();
    expect(await store.profile('not a session id')).toBeUndefined();
  });
});

describe('transaction store', () => {
  it('claims once, returns the record to a duplicate and refuses another body', async () => {
    expect(await claim(tx('debit', 'b1', 'r1'))).toEqual({ kind: 'claimed', sessionBalance: '100.00' });
    const dup = await claim(tx('debit', 'b1', 'r1'));
    expect(dup.kind).toBe('duplicate');
    expect(dup.kind === 'duplicate' && dup.record).toMatchObject({ transactionId: 'b1', state: 'pending', attempts: 0, playerId: '18446744073709551615' });
    expect(await claim(tx('debit', 'b1', 'r1', { bodyHash: 'other' }))).toEqual({ kind: 'conflict' });
    expect(await txs.dueForSweep(0, now + 1000, 10)).toContain('b1');
  });

  it("answers a duplicate with the session's balance, or null once the session is gone", async () => {
    const gone = (await sessions.create({ token: 'tok-gone', playerId: '3', siteId: '7', currency: 'EUR', gameId: 'g', balance: '9.50' }, now, DEFAULT_TOKEN_SESSION_CAP)).session!;
    const t = tx('debit', 'b-gone', 'r-gone', { sessionId: gone.sessionId, playerId: '3', tokenRef: tokenRefOf('tok-gone') });
    expect(await claim(t)).toEqual({ kind: 'claimed', sessionBalance: '9.50' });
    const dup = await claim(t);
    expect(dup.kind === 'duplicate' && dup.sessionBalance).toBe('9.50');
    await redis.del(keysFor(prefix).session(gone.sessionId));
    const late = await claim(t);
    expect(late.kind).toBe('duplicate');
    expect(late.kind === 'duplicate' && late.sessionBalance).toBeNull();
    // a new transaction of a session that is gone is refused, whatever a cache may still hold
    expect(await claim(tx('debit', 'b-gone-2', 'r-gone-2', { sessionId: gone.sessionId, playerId: '3' }))).toEqual({ kind: 'session_not_found' });
  });

  it("renews the session's expiry in the claim when asked, never for an ending session", async () => {
    const s = (await sessions.create({ token: 'tok-ttl', playerId: '4', siteId: '7', currency: 'EUR', gameId: 'g', balance: '1.00' }, now, DEFAULT_TOKEN_SESSION_CAP)).session!;
    const key = keysFor(prefix).session(s.sessionId);
    const t = (id: string, round: string) => tx('debit', id, round, { sessionId: s.sessionId, playerId: '4', tokenRef: tokenRefOf('tok-ttl') });
    await redis.expire(key, 10);
    await claim(t('b-ttl-0', 'r-ttl-0'));
    expect(await redis.ttl(key)).toBeLessThanOrEqual(10);
    expect(await txs.claim({ record: t('b-ttl-1', 'r-ttl-1'), exactAmount: '5', leaseUntil: now, sessionTtlSeconds: 5000 })).toEqual({ kind: 'claimed', sessionBalance: '1.00' });
    expect(await txs.settle(t('b-ttl-1', 'r-ttl-1'), { state: 'succeeded', expect: ['pending'], attempts: 1, lastWalletCode: 1, history: [1] })).toBe(true);
    expect(await redis.ttl(key)).toBeGreaterThan(4000);
    // a refused claim leaves the expiry alone
    await redis.expire(key, 10);
    expect((await txs.claim({ record: t('b-ttl-2', 'r-ttl-1'), exactAmount: '5', leaseUntil: now, sessionTtlSeconds: 5000 })).kind).toBe('round_has_bet');
    expect(await redis.ttl(key)).toBeLessThanOrEqual(10);
    // ending: no expiry until its terminate went out, and a claim does not give it one
    expect((await sessions.end(s, lease())).kind).toBe('pending');
    const credit = tx('credit', 'w-ttl-1', 'r-ttl-1', { sessionId: s.sessionId, playerId: '4', tokenRef: tokenRefOf('tok-ttl'), referenceTransactionId: 'b-ttl-1' });
    expect((await txs.claim({ record: credit, exactAmount: exactDecimal(credit.amount), leaseUntil: now, sessionTtlSeconds: 5000 })).kind).toBe('claimed');
    expect(await redis.ttl(key)).toBe(-1);
  });

  it('keeps a record compact (listpack) and its wallet body byte-exact, multi-byte text and long tokens included', async () => {
    const token = `tök-€-😀-${'x'.repeat(300)}`;
    const walletBody = encodeRequest('debit', { token, player_id: '18446744073709551615', site_id: '7', provider_id: '1', game_id: 'spiel-ß-😀', currency: 'EUR', amount: '5.00', round_id: 'r-lp', transaction_id: 'b-lp', round_closed: false });
    expect(await claim(tx('debit', 'b-lp', 'r-lp', { walletBody }))).toEqual({ kind: 'claimed', sessionBalance: '100.00' });
    expect((await txs.get('b-lp'))?.walletBody).toBe(walletBody);
    expect(await redis.object('ENCODING', keysFor(prefix).transaction('b-lp'))).toBe('listpack');
    // dead keeps the body (an operator's redrive sends it again), still compact
    await txs.settle((await txs.get('b-lp'))!, { state: 'dead', expect: ['pending'], attempts: 11, note: 'retries exhausted' });
    expect(await redis.object('ENCODING', keysFor(prefix).transaction('b-lp'))).toBe('listpack');
    const dead = (await txs.get('b-lp'))!;
    expect(dead.walletBody).toBe(walletBody);
    expect(Buffer.from(dead.walletBody, 'utf8').equals(Buffer.from(walletBody, 'utf8'))).toBe(true);
    const dup = await claim(tx('debit', 'b-lp', 'r-lp', { walletBody }));
    expect(dup.kind === 'duplicate' && dup.record.walletBody).toBe(walletBody);
    // redriven (dead → pending, as duties/redrive does): the retry resends the very same bytes
    expect(await txs.settle(dead, { state: 'pending', expect: ['dead'], history: [], error: null, note: null, nextCheckAt: now })).toBe(true);
    const redriven = (await txs.get('b-lp'))!;
    expect(redriven.state).toBe('pending');
    expect(Buffer.from(redriven.walletBody, 'utf8').equals(Buffer.from(walletBody, 'utf8'))).toBe(true);
    await txs.settle(redriven, { state: 'succeeded', expect: ['pending'], attempts: 12, lastWalletCode: 1, history: [1], balance: '95.00' });
    expect(await redis.object('ENCODING', keysFor(prefix).transaction('b-lp'))).toBe('listpack');
    expect(await bodyFieldsOf('b-lp')).toEqual([]);
  });

  it('stores a claimed record field for field as newRecordFields lays it out (every reader and script reads one layout)', async () => {
    const cases = [
      tx('debit', 'b-layout', 'r-layout'),
      tx('debit', 'b-layout-empty', 'r-layout-empty', { walletBody: '', roundClosed: true }),
      tx('debit', 'b-layout-long', 'r-layout-long', { walletBody: 'z'.repeat(64 * 6 + 1) }),
    ];
    for (const record of cases) {
      expect((await claim(record)).kind).toBe('claimed');
      const stored = await redis.hgetall(keysFor(prefix).transaction(record.transactionId));
      expect(stored).toEqual(pairsToObject(newRecordFields(record, now)));
      expect(await txs.get(record.transactionId)).toMatchObject({ ...record, state: 'pending', attempts: 0 });
    }
    const bet = tx('debit', 'b-layout-2', 'r-layout-2');
    await betApplied(bet);
    const win = tx('credit', 'w-layout-2', 'r-layout-2', { referenceTransactionId: 'b-layout-2' });
    expect((await claim(win)).kind).toBe('claimed');
    // a win counts in its round (`in_round` set by the script); the rest as laid out
    expect(await redis.hgetall(keysFor(prefix).transaction('w-layout-2'))).toEqual({ ...pairsToObject(newRecordFields(win, now)), in_round: '1' });
  });

  it("trims the operators' indexes on the claims whose id picks it: until then entries past the retention and a player's records past the cap wait, and the reads stay the same", async () => {
    const s = (await sessions.create({ token: 'tok-trim', playerId: '13', siteId: '7', currency: 'EUR', gameId: 'g', balance: '100.00' }, now, DEFAULT_TOKEN_SESSION_CAP)).session!;
    const keys = keysFor(prefix);
    const bet = (id: string, createdAt: number) => tx('debit', id, `r-${id}`, { sessionId: s.sessionId, playerId: '13', tokenRef: tokenRefOf('tok-trim'), createdAt });
    let next = 0;
    /** The next test id that does (or does not) trim. */
    const idThat = (trims: boolean): string => {
      for (;;) {
        next += 1;
        if (trimsIndexes(`trim-${next}`) === trims) return `trim-${next}`;
      }
    };
    const old = idThat(false);
    expect((await claim(bet(old, now - 2 * 3600_000))).kind).toBe('claimed');
    // Claims that do not trim leave the entry past the retention (its reads skip a record that expired)…
    let at = now;
    for (let i = 0; i < PLAYER_RECENT_CAP + 9; i += 1) expect((await claim(bet(idThat(false), (at += 1)))).kind).toBe('claimed');
    expect(await redis.zscore(keys.timeIndex(), old)).not.toBeNull();
    expect(await redis.zcard(keys.playerRecent('13', '7'))).toBe(PLAYER_RECENT_CAP + 10);
    // …and a player's page still shows only the newest PLAYER_RECENT_CAP.
    const shown = await playerRecentRecords(redis, shardLayout(prefix, 1), '13', '7', 500);
    expect(shown).toHaveLength(PLAYER_RECENT_CAP);
    expect(shown[0]!.createdAt).toBe(at);
    expect(shown.at(-1)!.createdAt).toBe(at - PLAYER_RECENT_CAP + 1);
    // The next claim that trims drops both.
    const trimming = idThat(true);
    expect((await claim(bet(trimming, (at += 1)))).kind).toBe('claimed');
    expect(await redis.zscore(keys.timeIndex(), old)).toBeNull();
    expect(await redis.zcard(keys.playerRecent('13', '7'))).toBe(PLAYER_RECENT_CAP);
    expect(await redis.zrevrange(keys.playerRecent('13', '7'), 0, 0)).toEqual([trimming]);
    expect(await redis.ttl(keys.playerRecent('13', '7'))).toBeGreaterThan(3000);
  });

  it("drops every piece of a final record's wallet body whatever body the caller holds: the stored one, none, a shorter or a longer one", async () => {
    const s = (await sessions.create({ token: 'tok-pieces', playerId: '12', siteId: '7', currency: 'EUR', gameId: 'g', balance: '100.00' }, now, DEFAULT_TOKEN_SESSION_CAP)).session!;
    const bet = (id: string) => tx('debit', id, `r-${id}`, { sessionId: s.sessionId, playerId: '12', tokenRef: tokenRefOf('tok-pieces') });
    const held = { stored: undefined, none: '', shorter: 'x', longer: 'y'.repeat(64 * 20) } as const;
    for (const [name, walletBody] of Object.entries(held)) {
      const record = bet(`bp-${name}`);
      expect((await claim(record)).kind).toBe('claimed');
      expect((await bodyFieldsOf(record.transactionId)).length).toBeGreaterThan(2);
      const ref = walletBody === undefined ? record : { ...record, walletBody };
      expect(await txs.settle(ref, { state: 'succeeded', expect: ['pending'], attempts: 1, lastWalletCode: 1, history: [1], balance: '95.00' })).toBe(true);
      expect([name, await bodyFieldsOf(record.transactionId)]).toEqual([name, []]);
      expect(await txs.get(record.transactionId)).toMatchObject({ state: 'succeeded', walletBody: '', walletRoundId: `r-${record.transactionId}` });
    }
  });

  it('drops the wallet body of a succeeded, failed or compensated record in the settle; pending, compensating and dead keep it', async () => {
    const s = (await sessions.create({ token: 'tok-drop', playerId: '11', siteId: '7', currency: 'EUR', gameId: 'g', balance: '100.00' }, now, DEFAULT_TOKEN_SESSION_CAP)).session!;
    const t = (kind: 'debit' | 'credit' | 'rollback', id: string, round: string, extra: Partial<NewTransaction> = {}) =>
      tx(kind, id, round, { sessionId: s.sessionId, playerId: '11', tokenRef: tokenRefOf('tok-drop'), ...extra });
    await claim(t('debit', 'd-ok', 'rd-0'));
    await claim(t('debit', 'd-no', 'rd-1'));
    const pieces = await bodyFieldsOf('d-ok');
    expect(pieces.length).toBeGreaterThan(1);

    // a retry step keeps it; the final step drops it and nothing else
    const ok = (await txs.get('d-ok'))!;
    await txs.settle(ok, { state: 'pending', expect: ['pending'], attempts: 1, history: ['unknown'] });
    expect(await bodyFieldsOf('d-ok')).toEqual(pieces);
    await txs.settle(ok, { state: 'succeeded', expect: ['pending'], attempts: 1, lastWalletCode: 1, history: [1], balance: '95.00' });
    expect(await bodyFieldsOf('d-ok')).toEqual([]);
    expect(await txs.get('d-ok')).toMatchObject({ state: 'succeeded', walletBody: '', amount: '5.00', walletRoundId: 'rd-0', balance: '95.00', walletOperation: 'debit' });
    expect(await redis.ttl(keysFor(prefix).transaction('d-ok'))).toBeGreaterThan(0);
    const dup = await claim(t('debit', 'd-ok', 'rd-0'));
    expect(dup.kind === 'duplicate' && dup.record).toMatchObject({ state: 'succeeded', walletBody: '' });

    await txs.settle((await txs.get('d-no'))!, { state: 'failed', expect: ['pending'], attempts: 1, lastWalletCode: 106, history: [106], releaseRound: true });
    expect(await bodyFieldsOf('d-no')).toEqual([]);

    // compensation: the debit keeps its body while compensating, both drop it once compensated
    const error = codedError('WALLET_UNAVAILABLE', { message: 'timeout' });
    const compensate = async (debitId: string, round: string) => {
      await claim(t('debit', debitId, round));
      const debit = (await txs.get(debitId))!;
      const compensation = compensationFor(debit, now);
      await txs.beginCompensation({ debit, error, attempts: 1, lastWalletCode: null, history: ['unknown'], compensation, leaseUntil: now });
      expect(await txs.get(debitId)).toMatchObject({ state: 'compensating', walletBody: debit.walletBody });
      return { debit, comp: (await txs.get(compensation.transactionId))! };
    };
    const done = await compensate('d-comp', 'rd-comp');
    expect((await bodyFieldsOf(done.comp.transactionId)).length).toBeGreaterThan(1);
    await txs.settle(done.comp, { state: 'succeeded', expect: ['pending'], attempts: 1, lastWalletCode: 1, history: [1], debitState: 'compensated' });
    expect(await txs.get('d-comp')).toMatchObject({ state: 'compensated', walletBody: '' });
    expect(await bodyFieldsOf('d-comp')).toEqual([]);
    expect(await bodyFieldsOf(done.comp.transactionId)).toEqual([]);

    // a compensation refused for good: both dead, both keep their exact bodies
    const stuck = await compensate('d-stuck', 'rd-stuck');
    await txs.settle(stuck.comp, { state: 'dead', expect: ['pending'], attempts: 1, lastWalletCode: 106, history: [106], debitState: 'dead' });
    expect(await txs.get('d-stuck')).toMatchObject({ state: 'dead', walletBody: stuck.debit.walletBody });
    expect(await txs.get(stuck.comp.transactionId)).toMatchObject({ state: 'dead', walletBody: stuck.comp.walletBody });
    // redriven: the debit is compensating again and still holds its body
    await txs.settle(stuck.comp, { state: 'pending', expect: ['dead'], history: [], debitState: 'compensating' });
    expect(await txs.get('d-stuck')).toMatchObject({ state: 'compensating', walletBody: stuck.debit.walletBody });
    expect(await txs.get(stuck.comp.transactionId)).toMatchObject({ state: 'pending', walletBody: stuck.comp.walletBody });

    // the dead-check finding a dead win applied: succeeded, body dropped
    await betApplied(t('debit', 'd-w', 'rd-w'));
    await claim(t('credit', 'w-dead', 'rd-w', { referenceTransactionId: 'd-w' }));
    const win = (await txs.get('w-dead'))!;
    await txs.settle(win, { state: 'dead', expect: ['pending'], attempts: 11 });
    expect((await bodyFieldsOf('w-dead')).length).toBeGreaterThan(1);
    expect((await txs.get('w-dead'))?.walletBody).toBe(win.walletBody);
    await txs.settle(win, { state: 'succeeded', expect: ['dead'], error: null, note: 'applied at the wallet (status check of a dead record)' });
    expect(await bodyFieldsOf('w-dead')).toEqual([]);
  });

  it('keeps a settled bet and its win under 1 KiB of Redis each (MEMORY USAGE)', async () => {
    // Sizes like production's: a UUID token and 36-character ids.
    const token = randomUUID();
    const s = (await sessions.create({ token, playerId: '18446744073709551615', siteId: '18446744073709551615', currency: 'EUR', gameId: 'a-game-id-of-some-length', balance: '1000.00' }, now, DEFAULT_TOKEN_SESSION_CAP)).session!;
    const [betId, winId, round] = [randomUUID(), randomUUID(), randomUUID()];
    const fields = { token, player_id: '18446744073709551615', site_id: '18446744073709551615', provider_id: '18446744073709551615', game_id: 'a-game-id-of-some-length', currency: 'EUR', round_id: round };
    const common = { sessionId: s.sessionId, tokenRef: s.tokenRef, siteId: '18446744073709551615', walletRoundId: round };
    const bet = tx('debit', betId, round, { ...common, amount: '12.34', walletBody: encodeRequest('debit', { ...fields, amount: '12.34', transaction_id: betId, round_closed: false }) });
    const win = tx('credit', winId, round, {
      ...common,
      amount: '1234.56',
      referenceTransactionId: betId,
      walletBody: encodeRequest('credit', { ...fields, amount: '1234.56', transaction_id: winId, reference_transaction_id: betId, round_closed: true }),
    });
    expect((await claim(bet)).kind).toBe('claimed');
    await txs.settle(bet, { state: 'succeeded', expect: ['pending'], attempts: 1, lastWalletCode: 1, history: [1], balance: '987.66', sessionBalance: '987.66' });
    expect((await claim(win)).kind).toBe('claimed');
    await txs.settle(win, { state: 'succeeded', expect: ['pending'], attempts: 1, lastWalletCode: 1, history: [1], balance: '2222.22', sessionBalance: '2222.22' });
    for (const id of [betId, winId]) {
      const key = keysFor(prefix).transaction(id);
      expect(await redis.object('ENCODING', key)).toBe('listpack');
      expect(await redis.memory('USAGE', key)).toBeLessThan(1024);
    }
  });

  it('stores no empty value and no false flag: an update to empty deletes the field, and a record in the earlier format reads the same', async () => {
    const key = keysFor(prefix).transaction('b-absent');
    expect((await claim(tx('debit', 'b-absent', 'r-absent', { roundClosed: false }))).kind).toBe('claimed');
    const stored = await redis.hgetall(key);
    for (const field of ['reference_id', 'round_closed', 'is_compensation', 'deferred', 'queued', 'history', 'error']) expect(stored).not.toHaveProperty(field);
    expect(stored).toMatchObject({ attempts: '0', in_round: '0' });
    const fresh = (await txs.get('b-absent'))!;
    expect(fresh).toMatchObject({ referenceTransactionId: null, roundClosed: false, isCompensation: false, deferred: false, queued: false, history: [], error: null });

    await txs.settle(fresh, { state: 'pending', expect: ['pending'], attempts: 1, lastWalletCode: 2, history: [2], error: codedError('WALLET_UNAVAILABLE', { message: 'Unknown error' }), queued: true, nextCheckAt: now });
    expect(await redis.hmget(key, 'last_code', 'error', 'queued')).toEqual(['2', expect.stringContaining('Unknown error'), '1']);
    await txs.settle((await txs.get('b-absent'))!, { state: 'pending', expect: ['pending'], lastWalletCode: null, error: null, queued: false, nextCheckAt: now });
    expect(await redis.hmget(key, 'last_code', 'error', 'queued')).toEqual([null, null, null]);
    const cleared = (await txs.get('b-absent'))!;
    expect(cleared).toMatchObject({ lastWalletCode: null, error: null, queued: false, attempts: 1, history: [2] });

    // Written by an earlier version: empty values and '0' flags stored. Decoded alike, settled alike.
    await redis.hset(key, 'reference_id', '', 'round_closed', '0', 'is_compensation', '0', 'deferred', '0', 'queued', '0', 'error', '', 'last_code', '', 'note', '');
    expect(await txs.get('b-absent')).toEqual(cleared);
    expect(await txs.settle(cleared, { state: 'succeeded', expect: ['pending'], attempts: 2, lastWalletCode: 1, history: [2, 1], error: null, balance: '95.00' })).toBe(true);
    expect(await redis.hmget(key, 'state', 'error', 'last_code')).toEqual(['succeeded', null, '1']);
  });

  it('runs its scripts again after Redis forgot them (SCRIPT FLUSH, a restart)', async () => {
    await redis.script('FLUSH');
    expect(await claim(tx('debit', 'b-flush', 'r-flush'))).toEqual({ kind: 'claimed', sessionBalance: '100.00' });
    expect(await txs.settle((await txs.get('b-flush'))!, { state: 'succeeded', expect: ['pending'], attempts: 1 })).toBe(true);
    expect((await txs.get('b-flush'))?.state).toBe('succeeded');
  });

  it('allows one bet per round and a win only for the recorded bet', async () => {
    expect(await claim(tx('debit', 'b2', 'r2'))).toEqual({ kind: 'claimed', sessionBalance: '100.00' });
    expect(await claim(tx('debit', 'b2x', 'r2'))).toEqual({ kind: 'round_has_bet' });
    expect(await claim(tx('credit', 'w2x', 'r2', { referenceTransactionId: 'nope' }))).toEqual({ kind: 'bet_not_found' });
    // a win waits for its bet's success (contract 5.2), and is in its bet's currency
    expect(await claim(tx('credit', 'w2', 'r2', { referenceTransactionId: 'b2' }))).toEqual({ kind: 'in_progress' });
    expect(await txs.settle(tx('debit', 'b2', 'r2'), { state: 'succeeded', expect: ['pending'], attempts: 1, lastWalletCode: 1, history: [1] })).toBe(true);
    expect(await claim(tx('credit', 'w2', 'r2', { referenceTransactionId: 'b2', currency: 'JPY' }))).toEqual({ kind: 'currency_mismatch' });
    expect(await claim(tx('credit', 'w2', 'r2', { referenceTransactionId: 'b2' }))).toEqual({ kind: 'claimed', sessionBalance: '100.00' });
    // the win closed the round
    expect(await claim(tx('rollback', 'rf2', 'r2', { referenceTransactionId: 'b2' }))).toEqual({ kind: 'round_closed' });
  });

  it("starts a due plain retry in its read exactly as the worker's settle starts it, and only reads anything else", async () => {
    const plan = retryPlan('ms');
    const keys = keysFor(prefix);
    const pending = async (id: string) => ({ record: await txs.get(id), score: await redis.zscore(keys.pendingIndex(), id) });
    // Two wins whose inline attempts answered 2 (a plain retry code), one started each way.
    for (const id of ['w-br-a', 'w-br-b']) {
      await betApplied(tx('debit', `b-${id}`, `r-${id}`));
      await claim(tx('credit', id, `r-${id}`, { referenceTransactionId: `b-${id}` }));
      expect(await txs.settle(tx('credit', id, `r-${id}`), { state: 'pending', expect: ['pending'], attempts: 1, lastWalletCode: 2, history: [2], nextCheckAt: now })).toBe(true);
    }
    const due = now + plan.delaysMs[0]!;
    const start = { now: due, mayStart: true, inFlightUntil: due + 5000, nextCheckAt: due + 7000, plan, healthOkAt: due };
    expect(await txs.beginRetry('w-br-a', 0, { ...start, now: due - 1 })).toMatchObject({ kind: 'read', record: { attempts: 1, history: [2] } });
    expect(await txs.beginRetry('w-br-a', 0, { ...start, mayStart: false })).toMatchObject({ kind: 'read', record: { attempts: 1 } });
    // 2 is evidence of an outage: with no health check passed since that answer, only read.
    expect(await txs.beginRetry('w-br-a', 0, { ...start, healthOkAt: now })).toMatchObject({ kind: 'read', record: { attempts: 1 } });
    expect(await txs.beginRetry('w-br-a', 0, start)).toMatchObject({ kind: 'started', record: { attempts: 1, history: [2], inFlightUntil: null } });
    const b = (await txs.get('w-br-b'))!;
    const viaSettle = createTransactionStore(redis, shardLayout(prefix, 1), 3600, () => due);
    await viaSettle.settle(b, { state: 'pending', expect: ['pending'], expectAttempts: 1, attempts: 2, history: [2, 'unknown'], inFlightUntil: due + 5000, nextCheckAt: due + 7000 });
    const [a, settled] = [await pending('w-br-a'), await pending('w-br-b')];
    const comparable = (p: typeof a) => ({ ...p, record: { ...p.record, transactionId: '', bodyHash: '', roundId: '', walletRoundId: '', referenceTransactionId: '', walletBody: '' } });
    expect(comparable(a)).toEqual(comparable(settled));
    expect(a.record).toMatchObject({ attempts: 2, history: [2, 'unknown'], inFlightUntil: due + 5000, updatedAt: due });
    // In flight now: a second run only reads.
    expect(await txs.beginRetry('w-br-a', 0, start)).toMatchObject({ kind: 'read', record: { attempts: 2 } });
    // A 34 (limited) and a missing record are left to the worker's own checks.
    await betApplied(tx('debit', 'b-w-br-c', 'r-w-br-c'));
    await claim(tx('credit', 'w-br-c', 'r-w-br-c', { referenceTransactionId: 'b-w-br-c' }));
    await txs.settle(tx('credit', 'w-br-c', 'r-w-br-c'), { state: 'pending', expect: ['pending'], attempts: 1, lastWalletCode: 34, history: [34], nextCheckAt: now });
    expect(await txs.beginRetry('w-br-c', 0, start)).toMatchObject({ kind: 'read', record: { attempts: 1 } });
    expect(await txs.beginRetry('w-br-none', 0, start)).toBeUndefined();
  });

  it('gives the round back when the closing call is refused', async () => {
    expect(await claim(tx('debit', 'b3', 'r3', { roundClosed: true }))).toEqual({ kind: 'claimed', sessionBalance: '100.00' });
    const bet = (await txs.get('b3'))!;
    expect(await txs.settle(bet, { state: 'failed', expect: ['pending'], attempts: 1, lastWalletCode: 106, history: [106], releaseRound: true })).toBe(true);
    expect(await claim(tx('debit', 'b3b', 'r3'))).toEqual({ kind: 'claimed', sessionBalance: '100.00' });
    expect(await txs.settle(bet, { state: 'succeeded', expect: ['pending'] })).toBe(false);
  });

  it('checks a refund amount against its bet', async () => {
    await claim(tx('debit', 'b4', 'r4'));
    expect(await claim(tx('rollback', 'rf4', 'r4', { referenceTransactionId: 'b4' }), '4.99')).toEqual({ kind: 'amount_mismatch' });
    // exact decimals: 5 and 5.00 are one amount; another currency is refused before the amount is read
    expect(await claim(tx('rollback', 'rf4', 'r4', { referenceTransactionId: 'b4', currency: 'JPY', amount: '500' }))).toEqual({ kind: 'currency_mismatch' });
    expect(await claim(tx('rollback', 'rf4', 'r4', { referenceTransactionId: 'b4' }), '5')).toEqual({ kind: 'claimed', sessionBalance: '100.00' });
    expect(await claim(tx('rollback', 'rf4b', 'r4', { referenceTransactionId: 'b4', roundClosed: false }))).toEqual({ kind: 'round_closed' });
  });

  it('starts one compensation per debit and settles the debit with it', async () => {
    await claim(tx('debit', 'b5', 'r5'));
    const debit = (await txs.get('b5'))!;
    const compensation = compensationFor(debit, now);
    expect(compensation.transactionId).toBe(compensationTransactionId('b5'));
    const error = codedError('WALLET_UNAVAILABLE', { message: 'timeout' });
    const start = { debit, error, attempts: 1, lastWalletCode: null, history: ['unknown' as const], compensation, leaseUntil: now };
    expect(await txs.beginCompensation(start)).toEqual({ kind: 'created', compensationId: compensation.transactionId });
    expect(await txs.beginCompensation(start)).toEqual({ kind: 'not_pending', state: 'compensating' });
    expect(await txs.get('b5')).toMatchObject({ state: 'compensating', compensationId: compensation.transactionId, error });
    // an engine refund of that bet can no longer go out as a second rollback
    expect(await claim(tx('rollback', 'rf5', 'r5', { referenceTransactionId: 'b5' }))).toEqual({ kind: 'bet_already_refunded' });

    const comp = (await txs.get(compensation.transactionId))!;
    expect(comp).toMatchObject({ kind: 'rollback', state: 'pending', isCompensation: true, referenceTransactionId: 'b5' });
    await txs.settle(comp, { state: 'succeeded', expect: ['pending'], attempts: 1, lastWalletCode: 1, history: [1], debitState: 'compensated' });
    expect(await txs.get('b5')).toMatchObject({ state: 'compensated' });
    expect(await txs.dueForSweep(0, Number.MAX_SAFE_INTEGER, 100)).not.toContain(compensation.transactionId);
  });

  it('settles an engine refund "nothing reversed, the bet never applied" only while it stands in for its bet\'s compensation, moving the bet compensated and watched in the same step', async () => {
    const update = { state: 'succeeded' as const, expect: ['pending' as const], attempts: 4, lastWalletCode: 1, history: [34, 34, 34, 34], debitState: 'compensated' as const, onlyIfStandsIn: true, watchDebit: { until: now + 60_000, firstCheckAt: now + 500 } };
    // its bet still at the wallet: the refund stands in for nothing yet
    await claim(tx('debit', 'b-si', 'r-si'));
    const refund = tx('rollback', 'rf-si', 'r-si', { referenceTransactionId: 'b-si' });
    expect((await claim(refund)).kind).toBe('claimed');
    expect(await txs.settle(refund, update)).toBe(false);
    expect(await txs.get('rf-si')).toMatchObject({ state: 'pending' });

    const debit = (await txs.get('b-si'))!;
    const error = codedError('WALLET_UNAVAILABLE', { message: 'timeout' });
    await txs.beginCompensation({ debit, error, attempts: 1, lastWalletCode: null, history: ['unknown'], compensation: compensationFor(debit, now), leaseUntil: now });
    expect(await txs.get('b-si')).toMatchObject({ state: 'compensating', compensationId: 'rf-si' });
    expect(await txs.settle(refund, update)).toBe(true);
    expect(await txs.get('rf-si')).toMatchObject({ state: 'succeeded' });
    expect(await txs.get('b-si')).toMatchObject({ state: 'compensated', recheckUntil: now + 60_000 });
    expect(await txs.dueForRecheck(0, now + 500, 10)).toContain('b-si');
  });

  it("watches a never-applied bet on its own token when the refund standing in for its compensation came through another token of the player (contract 5.4, 5.6)", async () => {
    const id = randomUUID().slice(0, 8);
    const launch = async (token: string) => (await sessions.create({ token, playerId: '9', siteId: '7', currency: 'EUR', gameId: 'g', balance: '100.00' }, now, DEFAULT_TOKEN_SESSION_CAP)).session!;
    const betSession = await launch(`tok-bet-${id}`);
    const refundSession = await launch(`tok-refund-${id}`);
    const on = (s: typeof betSession) => ({ sessionId: s.sessionId, tokenRef: s.tokenRef, playerId: '9' });
    const bet = tx('debit', `b-${id}`, `r-${id}`, on(betSession));
    expect((await claim(bet)).kind).toBe('claimed');
    const refund = tx('rollback', `rf-${id}`, `r-${id}`, { ...on(refundSession), referenceTransactionId: bet.transactionId });
    expect((await claim(refund)).kind).toBe('claimed');
    const debit = (await txs.get(bet.transactionId))!;
    const error = codedError('WALLET_UNAVAILABLE', { message: 'timeout' });
    await txs.beginCompensation({ debit, error, attempts: 1, lastWalletCode: null, history: ['unknown'], compensation: compensationFor(debit, now), leaseUntil: now });
    const neverApplied = { state: 'succeeded' as const, expect: ['pending' as const], attempts: 4, lastWalletCode: 1, history: [34, 34, 34, 34], debitState: 'compensated' as const, onlyIfStandsIn: true, watchDebit: { until: now + 60_000, firstCheckAt: now + 500 } };
    expect(await txs.settle(refund, neverApplied)).toBe(true);

    // The refund's token holds nothing: its end decides its terminate.
    expect(await sessions.end(refundSession, lease())).toMatchObject({ kind: 'terminate' });
    // The bet's own token waits while the bet is watched (the wallet may still apply it late).
    expect(await sessions.end(betSession, lease())).toMatchObject({ kind: 'pending' });
    expect(await sessions.takeTerminate(betSession.tokenRef, lease())).toEqual({ kind: 'wait', for: 'work' });
    // The watch over (the sweeper's settle at the end of the window), the terminate goes.
    expect(await txs.settle((await txs.get(bet.transactionId))!, { state: 'compensated', expect: ['compensated'], note: 'not applied at the wallet by the end of the re-check window' })).toBe(true);
    expect(await sessions.takeTerminate(betSession.tokenRef, lease())).toMatchObject({ kind: 'send', attempt: 1 });
  });

  it('lists dead records until they are driven again', async () => {
    await betApplied(tx('debit', 'b6', 'r6'));
    await claim(tx('credit', 'w6', 'r6', { referenceTransactionId: 'b6' }));
    const win = (await txs.get('w6'))!;
    await txs.settle(win, { state: 'dead', expect: ['pending'], note: 'retries-exhausted' });
    expect((await txs.listDead(0, 10)).ids).toContain('w6');
    expect(await redis.ttl(keysFor(prefix).transaction('w6'))).toBe(-1);
    await txs.settle(win, { state: 'pending', expect: ['dead'], history: [], nextCheckAt: now });
    expect((await txs.listDead(0, 10)).ids).not.toContain('w6');
  });

  it('refuses bets in an ending session but still takes wins', async () => {
    await betApplied(tx('debit', 'b7', 'r7'));
    expect((await sessions.end({ sessionId, tokenRef: tokenRefOf('tok') }, lease())).kind).toBe('pending');
    expect(await claim(tx('debit', 'b7b', 'r7b'))).toEqual({ kind: 'session_ended' });
    expect(await claim(tx('credit', 'w7', 'r7', { referenceTransactionId: 'b7' }))).toEqual({ kind: 'claimed', sessionBalance: '100.00' });
    expect(await sessions.pendingCount({ tokenRef: tokenRefOf('tok') })).toBeGreaterThan(0);
  });

  it('holds a round closer while earlier credits of its round are pending', async () => {
    const open = (await sessions.create({ token: 'tok', playerId: '18446744073709551615', siteId: '7', currency: 'EUR', gameId: 'g', balance: '1.00' }, now, DEFAULT_TOKEN_SESSION_CAP)).session!;
    const t = (kind: 'debit' | 'credit', id: string, extra: Partial<NewTransaction> = {}) => tx(kind, id, 'r8', { sessionId: open.sessionId, ...extra });
    await betApplied(t('debit', 'b8'));
    expect(await claim(t('credit', 'w8a', { referenceTransactionId: 'b8', roundClosed: false }))).toEqual({ kind: 'claimed', sessionBalance: '1.00' });
    expect(await claim(t('credit', 'w8b', { referenceTransactionId: 'b8', roundClosed: true }))).toEqual({ kind: 'deferred', sessionBalance: '1.00' });
    const first = (await txs.get('w8a'))!;
    const closer = (await txs.get('w8b'))!;
    expect(closer).toMatchObject({ state: 'pending', deferred: true, attempts: 0 });
    expect(await txs.openInRound(closer)).toBe(1);
    expect(await txs.openInRound(first)).toBe(1);
    // the round is closed for newcomers at once
    expect(await claim(t('credit', 'w8c', { referenceTransactionId: 'b8', roundClosed: false }))).toEqual({ kind: 'round_closed' });

    await txs.settle(first, { state: 'pending', expect: ['pending'], attempts: 1, history: [12] });
    expect(await txs.openInRound(closer)).toBe(1);
    // dead work still holds the round: the closer keeps waiting for an operator (contract 5.6)
    await txs.settle(first, { state: 'dead', expect: ['pending'], attempts: 11 });
    expect(await txs.openInRound(closer)).toBe(1);
    // a redrive keeps it counted; its end counts it out once only
    await txs.settle(first, { state: 'pending', expect: ['dead'], history: [] });
    expect(await txs.openInRound(closer)).toBe(1);
    await txs.settle(first, { state: 'succeeded', expect: ['pending'] });
    await txs.settle(first, { state: 'succeeded', expect: ['succeeded'] });
    expect(await txs.openInRound(closer)).toBe(0);
    expect(await txs.openInRound(first)).toBe(1);
  });

  it('keeps pending work in one set per wallet token, shared by relaunched sessions', async () => {
    const again = (await sessions.create({ token: 'tok', playerId: '18446744073709551615', siteId: '7', currency: 'EUR', gameId: 'g', balance: '1.00' }, now, DEFAULT_TOKEN_SESSION_CAP)).session!;
    expect(again.tokenRef).toBe(tokenRefOf('tok'));
    const other = (await sessions.create({ token: 'other-token', playerId: '1', siteId: '7', currency: 'EUR', gameId: 'g', balance: '1.00' }, now, DEFAULT_TOKEN_SESSION_CAP)).session!;
    const before = await sessions.pendingCount(again);
    expect(before).toBeGreaterThan(0);
    expect(await sessions.pendingCount(other)).toBe(0);
    await claim(tx('debit', 'b9', 'r9', { sessionId: again.sessionId }));
    expect(await sessions.pendingCount(again)).toBe(before + 1);
    const bet = (await txs.get('b9'))!;
    await txs.settle(bet, { state: 'succeeded', expect: ['pending'] });
    expect(await sessions.pendingCount(again)).toBe(before);
  });
});

describe('scripts', () => {
  test('are loaded again where Redis no longer knows them (a restart or a failover: NOSCRIPT)', async () => {
    const id = `flush-${randomUUID()}`;
    const session = (await sessions.create({ token: `tok-${id}`, playerId: '1', siteId: '7', currency: 'EUR', gameId: 'g', balance: '100.00' }, now, DEFAULT_TOKEN_SESSION_CAP)).session!;
    const record = tx('debit', id, `round-${id}`, { sessionId: session.sessionId, tokenRef: session.tokenRef });
    await redis.script('FLUSH');
    await expect(claim(record)).resolves.toMatchObject({ kind: 'claimed' });
    await redis.script('FLUSH');
    await expect(txs.settle(record, { state: 'succeeded', expect: ['pending'], attempts: 1, lastWalletCode: 1 })).resolves.toBe(true);
    await redis.script('FLUSH');
    await expect(sessions.end(session, lease())).resolves.toMatchObject({ kind: 'terminate' });
  });
});

describe('ending a wallet token (contract 5.6)', () => {
  const make = (token: string) => sessions.create({ token, playerId: '21', siteId: '7', currency: 'EUR', gameId: 'g', balance: '10.00' }, now, DEFAULT_TOKEN_SESSION_CAP).then((made) => made.session);

  it('waits for every session on the token; an expired one counts as ended', async () => {
    const token = `tok-${randomUUID()}`;
    const older = (await make(token))!;
    const newer = (await make(token))!;
    expect(await sessions.end(newer, lease())).toMatchObject({ kind: 'waiting' });
    expect(await sessions.takeTerminate(newer.tokenRef, lease())).toEqual({ kind: 'wait', for: 'sessions' });
    await redis.del(keysFor(prefix).session(older.sessionId));
    expect(await sessions.takeTerminate(newer.tokenRef, lease())).toMatchObject({ kind: 'send', attempt: 1 });
  });

  it('looks again at a token waiting for another session when that session would expire, if before the usual recheck', async () => {
    const token = `tok-${randomUUID()}`;
    // A session whose launch answer was lost: the engine never ends it, only its expiry does.
    const orphan = (await make(token))!;
    const played = (await make(token))!;
    const k = keysFor(prefix);
    await redis.pexpire(k.session(orphan.sessionId), 5000);
    expect(await sessions.end(played, lease())).toMatchObject({ kind: 'waiting' });
    const lookAt = Number(await redis.zscore(k.endingIndex(), played.tokenRef));
    expect(lookAt).toBeGreaterThan(now + 4000);
    expect(lookAt).toBeLessThanOrEqual(now + 5001);
    // The sweeper's later look meets it still open (renewed meanwhile): the usual recheck again.
    await redis.expire(k.session(orphan.sessionId), 3600);
    expect(await sessions.takeTerminate(played.tokenRef, lease())).toEqual({ kind: 'wait', for: 'sessions' });
    expect(Number(await redis.zscore(k.endingIndex(), played.tokenRef))).toBe(now + 60_000);
  });

  it('keeps the token\'s keys while an end on it is outstanding, past the expiry of the session it waits for', async () => {
    const token = `tok-${randomUUID()}`;
    const orphan = (await make(token))!;
    const played = (await make(token))!;
    const k = keysFor(prefix);
    // The token's keys were last renewed with the orphan: left alone, they would expire with it.
    for (const key of [k.session(orphan.sessionId), k.token(played.tokenRef), k.tokenSessions(played.tokenRef)]) await redis.pexpire(key, 300);
    expect(await sessions.end(played, lease())).toMatchObject({ kind: 'waiting' });
    expect(await redis.pttl(k.token(played.tokenRef))).toBe(-1);
    expect(await redis.pttl(k.tokenSessions(played.tokenRef))).toBe(-1);
    // A touch of a session still open renews that session, not the token's keys any more.
    await sessions.touch(orphan);
    expect(await redis.ttl(k.session(orphan.sessionId))).toBeGreaterThan(1000);
    expect(await redis.pttl(k.token(played.tokenRef))).toBe(-1);
    await redis.pexpire(k.session(orphan.sessionId), 100);
    await waitFor('the orphan expired', async () => (await redis.exists(k.session(orphan.sessionId))) === 0, 5000, { intervalMs: 20 });
    expect(await sessions.takeTerminate(played.tokenRef, lease())).toMatchObject({ kind: 'send', attempt: 1 });
  });

  it('once decided, the token takes no claim and no new session, and a second sender waits for the lease', async () => {
    const token = `tok-${randomUUID()}`;
    const s = (await make(token))!;
    expect(await sessions.end(s, lease())).toMatchObject({ kind: 'terminate' });
    const win = tx('credit', `w-${randomUUID()}`, `r-${randomUUID()}`, { sessionId: s.sessionId, tokenRef: s.tokenRef, playerId: '21' });
    expect(await claim(win)).toEqual({ kind: 'session_ended' });
    expect(await make(token)).toBeUndefined();
    expect(await sessions.takeTerminate(s.tokenRef, lease())).toEqual({ kind: 'busy', leaseUntil: now + 1000 });
    await sessions.finishTerminate(s.tokenRef, { outcome: 'terminated', now, retentionSeconds: 60, walletCode: 1, balance: '9.00' });
    expect(await sessions.get(s.sessionId)).toMatchObject({ state: 'ended', balance: '9.00' });
    expect(await sessions.takeTerminate(s.tokenRef, lease())).toEqual({ kind: 'terminated' });
    expect(await sessions.end(s, lease())).toEqual({ kind: 'ended', balance: '9.00' });
  });

  it('keeps the token\'s keys alive as long as its sessions, and without expiry once decided', async () => {
    const token = `tok-${randomUUID()}`;
    const s = (await make(token))!;
    const k = keysFor(prefix);
    expect(await redis.ttl(k.token(s.tokenRef))).toBeGreaterThan(3000);
    expect(await redis.ttl(k.tokenSessions(s.tokenRef))).toBeGreaterThan(3000);
    await sessions.end(s, lease());
    expect(await redis.ttl(k.token(s.tokenRef))).toBe(-1);
  });
});
