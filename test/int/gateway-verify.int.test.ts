import { createSessionStore } from '../../src/store/sessions';
import { encodeRequest } from '../../src/wallet/protocol';
import { Code } from '../../src/wallet/codes';
import { engine, launch, newPlayerId, startHarness, uniqueId, type Harness } from '../support/gateway-harness';
import { DEFAULT_TOKEN_SESSION_CAP } from '../../src/config/env';
import { exactDecimal } from '../../src/lib/money';

/**
 * Verify (wallet `status`) of records that still hold their wallet body (pending) and of settled
 * ones that no longer do: the fields then come from the record and its session.
 */
let h: Harness;

beforeAll(async () => {
  h = await startHarness({ label: 'gw-verify' });
});

afterAll(async () => {
  await h.close();
});

beforeEach(() => {
  h.sim.faults.clear();
  h.sim.clearCalls();
});

const callsOf = (op: string, transactionId: string) => h.sim.calls().filter((c) => c.operation === op && c.transactionId === transactionId);

async function bodyFieldsOf(transactionId: string): Promise<string[]> {
  return Object.keys(await h.redis.hgetall(h.keys.transaction(transactionId))).filter((f) => /^body\d*$/.test(f));
}

/** The fields every status call must repeat from the call it asks about. */
function sessionPart(body: Readonly<Record<string, unknown>> | undefined) {
  const { token, player_id, site_id, provider_id, game_id, currency } = body ?? {};
  return { token, player_id, site_id, provider_id, game_id, currency };
}

describe('verify', () => {
  it('a succeeded bet whose wallet body was dropped: asked with the record and its session, the same fields as the debit', async () => {
    // multi_bet: the wallet round is the bet's own id, not the engine's round id
    const { sessionId } = await launch(h, { gameId: 'multi-game' });
    const betId = uniqueId('bet');
    const bet = await engine(h, `/sessions/${sessionId}/bet`, { round_id: 'r-multi', transaction_id: betId, amount: '10.10' });
    expect(bet.status).toBe(200);
    expect(await bodyFieldsOf(betId)).toEqual([]);
    expect((await h.transactions.get(betId))?.walletBody).toBe('');

    const verify = await engine(h, `/transactions/${betId}/verify`);
    expect(verify.status).toBe(200);
    expect(verify.body).toMatchObject({ transaction_id: betId, kind: 'debit', state: 'succeeded', round_id: 'r-multi', wallet: { outcome: 'ok', wallet_code: Code.Success } });
    const debit = callsOf('debit', betId)[0]!;
    const status = callsOf('status', betId)[0]!;
    expect(status.body).toEqual({ ...sessionPart(debit.body), amount: '10.10', round_id: betId, transaction_id: betId, action: 'debit' });
    expect(status.rawBody).toContain('"amount":10.10');
    expect(status.code).toBe(Code.Success);
  });

  it('a pending win is asked with its stored body: not applied yet, then applied', async () => {
    const { sessionId } = await launch(h);
    const betId = uniqueId('bet');
    const winId = uniqueId('win');
    await engine(h, `/sessions/${sessionId}/bet`, { round_id: 'r-p', transaction_id: betId, amount: '5' });
    h.sim.faults.failNext('credit', 1, Code.InternalServiceError, { transactionId: winId });
    const win = await engine(h, `/sessions/${sessionId}/win`, { round_id: 'r-p', transaction_id: winId, bet_transaction_id: betId, amount: '7.25' });
    expect(win.status).toBe(202);
    const record = (await h.transactions.get(winId))!;
    expect(record.state).toBe('pending');
    expect(record.walletBody).not.toBe('');

    const before = await engine(h, `/transactions/${winId}/verify`);
    expect(before.status).toBe(200);
    expect(before.body).toMatchObject({ state: 'pending', wallet: { outcome: 'rejected', wallet_code: Code.TransactionNotFound } });

    // The wallet takes the very request late; verify says so and leaves the record alone.
    expect((await h.wallet.send('credit', record.walletBody)).kind).toBe('ok');
    const after = await engine(h, `/transactions/${winId}/verify`);
    expect(after.body).toMatchObject({ state: 'pending', wallet: { outcome: 'ok', wallet_code: Code.Success } });
    const credit = callsOf('credit', winId)[0]!;
    for (const status of callsOf('status', winId)) {
      expect(status.body).toEqual({ ...sessionPart(credit.body), amount: '7.25', round_id: 'r-p', transaction_id: winId, action: 'credit' });
    }
    expect((await h.transactions.get(winId))?.state).toBe('pending');
  });

  it('a settled record whose session expired: the record view, and the wallet not asked', async () => {
    // A session store of its own, so the gateway's in-process profile cache never saw the session.
    const other = createSessionStore(h.redis, h.layout, 3600);
    const playerId = newPlayerId();
    const session = (await other.create({ token: uniqueId('tok'), playerId, siteId: '7', currency: 'EUR', gameId: 'slot-1', balance: '100.00' }, Date.now(), DEFAULT_TOKEN_SESSION_CAP)).session!;
    const betId = uniqueId('bet');
    const fields = { token: session.token, player_id: playerId, site_id: '7', provider_id: '1', game_id: 'slot-1', currency: 'EUR', amount: '1.00', round_id: 'r-x', transaction_id: betId };
    const record = {
      transactionId: betId, kind: 'debit' as const, sessionId: session.sessionId, tokenRef: session.tokenRef, playerId, siteId: '7', roundId: 'r-x', walletRoundId: 'r-x',
      amount: '1.00', currency: 'EUR', roundClosed: false, referenceTransactionId: null, bodyHash: `h-${betId}`, walletOperation: 'debit' as const,
      walletBody: encodeRequest('debit', { ...fields, round_closed: false }), isCompensation: false, createdAt: Date.now(),
    };
    expect((await h.transactions.claim({ record, exactAmount: exactDecimal(record.amount), leaseUntil: Date.now() + 10_000 })).kind).toBe('claimed');
    expect(await h.transactions.settle(record, { state: 'succeeded', expect: ['pending'], attempts: 1, lastWalletCode: 1, history: [1], balance: '99.00' })).toBe(true);
    await h.redis.del(h.keys.session(session.sessionId));

    const verify = await engine(h, `/transactions/${betId}/verify`);
    expect(verify.status).toBe(200);
    expect(verify.body).toMatchObject({
      transaction_id: betId,
      state: 'succeeded',
      balance: 99,
      wallet: { outcome: 'unknown', wallet_code: null, message: expect.stringMatching(/not asked: the session expired/), balance: null },
    });
    expect(h.sim.walletCalls()).toHaveLength(0);
  });
});
