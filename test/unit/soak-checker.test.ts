import { closingLine, reconcile, type CheckInput, type LedgerSnapshot, type RecordView } from '../../src/soak/checker';
import type { EngineHistory, EngineTransaction, Reply } from '../../src/soak/history';
import type { TransactionView as LedgerTransaction } from '../../src/sim';

const P = '18446744073709551615';
const TOKEN = 'tok-1';
const ok: Reply = { kind: 'answer', status: 200, state: 'succeeded', code: undefined, walletCode: null };
const queued: Reply = { kind: 'answer', status: 202, state: 'pending', code: undefined, walletCode: null };
const unavailable: Reply = { kind: 'answer', status: 503, state: 'failed', code: 'WALLET_UNAVAILABLE', walletCode: null };
const refused12: Reply = { kind: 'answer', status: 500, state: 'failed', code: 'WALLET_REJECTED', walletCode: 12 };
const gone: Reply = { kind: 'no-answer', reason: 'ECONNREFUSED' };
const inProgress: Reply = { kind: 'answer', status: 409, state: 'failed', code: 'IN_PROGRESS', walletCode: null };

function tx(id: string, kind: EngineTransaction['kind'], amount: string, replies: Reply[], bet: string | null = null): EngineTransaction {
  return {
    transactionId: id,
    kind,
    playerId: P,
    sessionId: 's1',
    roundId: `r-${bet ?? id}`,
    amount,
    betTransactionId: bet,
    roundClosed: kind !== 'debit',
    afterEnd: false,
    endSent: false,
    foreignBet: false,
    replies,
  };
}

function applied(id: string, op: LedgerTransaction['op'], amount: string, extra: Partial<LedgerTransaction> = {}): LedgerTransaction {
  return {
    transactionId: id,
    op,
    playerId: P,
    roundId: 'r',
    amount,
    referenceTransactionId: undefined,
    roundClosed: false,
    applied: true,
    rolledBack: false,
    rolledBackBy: undefined,
    timesApplied: 1,
    at: 0,
    ...extra,
  };
}

/** One player, one session on TOKEN, ended with 200. */
const history = (transactions: EngineTransaction[]): EngineHistory => ({
  players: [{ playerId: P, token: TOKEN, currency: 'EUR', scale: 2, startBalance: '1000.00' }],
  sessions: [{ playerId: P, token: TOKEN, sessionId: 's1' }],
  transactions,
  unansweredLaunches: [],
  ends: [{ playerId: P, token: TOKEN, sessionId: 's1', reply: ok }],
  interleavings: [],
});

/** The token terminated and no wallet call besides the ledger's, unless the test says otherwise. */
function check(input: Pick<CheckInput, 'history' | 'ledger' | 'records'> & Partial<CheckInput>): ReturnType<typeof reconcile> {
  return reconcile({ terminatedTokens: new Set([TOKEN]), calledTransactions: new Set(input.ledger.transactions.map((t) => t.transactionId)), ...input });
}

function records(entries: [string, RecordView | null][]): Map<string, RecordView | null> {
  return new Map(entries);
}
const done: RecordView = { state: 'succeeded', compensation: null };

/** A clean round: bet 10, win 25 (acknowledged with 202, credited later), balance 1015. */
function cleanRound(): { h: EngineHistory; ledger: LedgerSnapshot; recs: Map<string, RecordView | null> } {
  return {
    h: history([tx('b1', 'debit', '10.00', [ok]), tx('w1', 'credit', '25.00', [gone, queued, ok], 'b1')]),
    ledger: { players: [{ playerId: P, balance: '1015.00' }], transactions: [applied('b1', 'debit', '10.00'), applied('w1', 'credit', '25.00')] },
    recs: records([
      ['b1', done],
      ['w1', done],
    ]),
  };
}

describe('reconcile', () => {
  it('finds nothing wrong in a clean history, resends and 202s included', () => {
    const { h, ledger, recs } = cleanRound();
    const r = check({ history: h, ledger, records: recs });
    expect(r.findings).toEqual([]);
    expect(closingLine(r)).toBe('lost: 0, doubled: 0, drift: 0');
    expect(r.players[0]).toMatchObject({ implied: '1015.00', ledger: '1015.00', winsAccepted: 1, winsCredited: 1 });
  });

  it('counts an acknowledged win the wallet never applied as lost (and the balance drifts)', () => {
    const { h, recs } = cleanRound();
    const ledger: LedgerSnapshot = { players: [{ playerId: P, balance: '990.00' }], transactions: [applied('b1', 'debit', '10.00')] };
    const r = check({ history: h, ledger, records: recs });
    expect(closingLine(r)).toBe('lost: 1, doubled: 0, drift: 1');
    expect(r.findings.find((f) => f.kind === 'lost-win')?.transactionId).toBe('w1');
  });

  it('counts an acknowledged refund the wallet never applied as lost', () => {
    const h = history([tx('b1', 'debit', '10.00', [ok]), tx('f1', 'rollback', '10.00', [queued], 'b1')]);
    const ledger: LedgerSnapshot = { players: [{ playerId: P, balance: '990.00' }], transactions: [applied('b1', 'debit', '10.00')] };
    const r = check({ history: h, ledger, records: records([['b1', done], ['f1', { state: 'dead', compensation: null, reason: 'retries exhausted' }]]) });
    expect(r.lost).toBe(1);
    expect(r.findings.find((f) => f.kind === 'lost-refund')?.detail).toContain('retries exhausted');
    expect(r.records.dead).toEqual([{ transactionId: 'f1', reason: 'retries exhausted' }]);
  });

  it('counts a win paid on a bet the engine was told failed, and a bet both won and refunded, as lost (contract 5.2), though the balance agrees', () => {
    // The bet refused and rolled back, its win credited: each call matches what the engine was told.
    const outran = history([tx('b1', 'debit', '10.00', [unavailable]), tx('w1', 'credit', '25.00', [ok], 'b1')]);
    const ledger: LedgerSnapshot = {
      players: [{ playerId: P, balance: '1025.00' }],
      transactions: [applied('b1', 'debit', '10.00', { rolledBack: true, rolledBackBy: 'c1' }), applied('c1', 'rollback', '10.00', { referenceTransactionId: 'b1' }), applied('w1', 'credit', '25.00')],
    };
    const r = check({ history: outran, ledger, records: records([['b1', { state: 'compensated', compensation: { transaction_id: 'c1', state: 'succeeded' } }], ['w1', done]]) });
    expect(closingLine(r)).toBe('lost: 1, doubled: 0, drift: 0');
    expect(r.findings.map((f) => f.kind)).toEqual(['win-without-bet']);

    const both = history([tx('b2', 'debit', '10.00', [ok]), tx('w2', 'credit', '5.00', [ok], 'b2'), tx('f2', 'rollback', '10.00', [ok], 'b2')]);
    const paid: LedgerSnapshot = { players: [{ playerId: P, balance: '1005.00' }], transactions: [applied('b2', 'debit', '10.00'), applied('w2', 'credit', '5.00'), applied('f2', 'rollback', '10.00', { referenceTransactionId: 'b2' })] };
    const r2 = check({ history: both, ledger: paid, records: records([['b2', done], ['w2', done], ['f2', done]]) });
    expect(closingLine(r2)).toBe('lost: 1, doubled: 0, drift: 0');
    expect(r2.findings.map((f) => f.kind)).toEqual(['win-and-refund']);
  });

  it('counts a transaction applied twice as doubled', () => {
    const { h, recs } = cleanRound();
    const ledger: LedgerSnapshot = {
      players: [{ playerId: P, balance: '1040.00' }],
      transactions: [applied('b1', 'debit', '10.00'), applied('w1', 'credit', '25.00', { timesApplied: 2 })],
    };
    const r = check({ history: h, ledger, records: recs });
    expect(closingLine(r)).toBe('lost: 0, doubled: 1, drift: 1');
  });

  it('counts a refused debit with an unknown outcome that was applied and not rolled back as lost', () => {
    const h = history([tx('b1', 'debit', '10.00', [unavailable])]);
    const ledger: LedgerSnapshot = { players: [{ playerId: P, balance: '990.00' }], transactions: [applied('b1', 'debit', '10.00')] };
    const r = check({ history: h, ledger, records: records([['b1', { state: 'dead', compensation: { transaction_id: 'c1', state: 'dead' } }]]) });
    expect(closingLine(r)).toBe('lost: 1, doubled: 0, drift: 1');
    expect(r.findings.find((f) => f.kind === 'unrolled-debit')?.detail).toContain('unknown outcome');
  });

  it('accepts a refused debit that was applied and then rolled back, or never applied', () => {
    const h = history([tx('b1', 'debit', '10.00', [unavailable]), tx('b2', 'debit', '5.00', [refused12])]);
    const ledger: LedgerSnapshot = {
      players: [{ playerId: P, balance: '1000.00' }],
      transactions: [applied('b1', 'debit', '10.00', { rolledBack: true, rolledBackBy: 'c1' }), applied('c1', 'rollback', '10.00', { referenceTransactionId: 'b1' })],
    };
    const comp = (id: string): RecordView => ({ state: 'compensated', compensation: { transaction_id: id, state: 'succeeded' } });
    const r = check({ history: h, ledger, records: records([['b1', comp('c1')], ['b2', comp('c2')]]) });
    expect(r.findings).toEqual([]);
    expect(r.players[0]).toMatchObject({ betsRefused: 2, betsCompensated: 1 });
    expect(r.records.compensations).toBe(2);
  });

  it('reports drift when the balance differs with every transaction accounted for', () => {
    const { h, recs } = cleanRound();
    const ledger: LedgerSnapshot = {
      players: [{ playerId: P, balance: '1015.01' }],
      transactions: [applied('b1', 'debit', '10.00'), applied('w1', 'credit', '25.00')],
    };
    const r = check({ history: h, ledger, records: recs });
    expect(closingLine(r)).toBe('lost: 0, doubled: 0, drift: 1');
    expect(r.findings[0]?.detail).toContain('off by 0.01');
  });

  it('takes a duplicate that waited (IN_PROGRESS) and then got the stored answer as one acceptance', () => {
    const h = history([tx('b1', 'debit', '10.00', [ok, inProgress, ok]), tx('w1', 'credit', '0', [ok], 'b1')]);
    const ledger: LedgerSnapshot = {
      players: [{ playerId: P, balance: '990.00' }],
      transactions: [applied('b1', 'debit', '10.00'), applied('w1', 'credit', '0.00')],
    };
    expect(check({ history: h, ledger, records: records([['b1', done], ['w1', done]]) }).findings).toEqual([]);
  });

  it('flags records that are not final and answers that contradict each other, outside the closing line', () => {
    const refusedWin: Reply = { kind: 'answer', status: 409, state: 'failed', code: 'ROUND_CLOSED', walletCode: null };
    const h = history([tx('b1', 'debit', '10.00', [ok]), tx('w1', 'credit', '25.00', [queued, refusedWin], 'b1')]);
    const ledger: LedgerSnapshot = {
      players: [{ playerId: P, balance: '1015.00' }],
      transactions: [applied('b1', 'debit', '10.00'), applied('w1', 'credit', '25.00')],
    };
    const r = check({ history: h, ledger, records: records([['b1', done], ['w1', { state: 'pending', compensation: null }]]) });
    expect(r.findings.map((f) => f.kind).sort()).toEqual(['inconsistent-answers', 'not-final']);
    expect(closingLine(r)).toBe('lost: 0, doubled: 0, drift: 0');
  });

  it('resolves a transaction the engine never heard back about by the gateway record', () => {
    const h = history([tx('b1', 'debit', '10.00', [gone, gone])]);
    const ledger: LedgerSnapshot = { players: [{ playerId: P, balance: '990.00' }], transactions: [applied('b1', 'debit', '10.00')] };
    const r = check({ history: h, ledger, records: records([['b1', done]]) });
    expect(r.findings.map((f) => f.kind)).toEqual(['unanswered']);
    expect(r.players[0]?.implied).toBe('990.00');
  });

  it("reports a record that disagrees with the wallet (failed, yet credited), outside the closing line", () => {
    const { h, ledger } = cleanRound();
    const r = check({ history: h, ledger, records: records([['b1', done], ['w1', { state: 'failed', compensation: null }]]) });
    expect(r.findings.map((f) => f.kind).sort()).toEqual(['acknowledged-failed', 'record-disagrees']);
    expect(closingLine(r)).toBe('lost: 0, doubled: 0, drift: 0');
  });

  it('reports a bet in an ended session that was accepted or reached the wallet', () => {
    const late = (id: string, replies: Reply[]): EngineTransaction => ({ ...tx(id, 'debit', '1.00', replies), afterEnd: true });
    const h = history([late('e1', [ok]), late('e2', [refused12]), late('e3', [refused12])]);
    const ledger: LedgerSnapshot = {
      players: [{ playerId: P, balance: '998.00' }],
      transactions: [applied('e1', 'debit', '1.00'), applied('e2', 'debit', '1.00')],
    };
    const r = check({ history: h, ledger, records: records([['e1', done], ['e2', null], ['e3', null]]) });
    expect(r.findings.filter((f) => f.kind === 'accepted-after-end').map((f) => f.transactionId)).toEqual(['e1', 'e2']);
  });

  describe('every token is terminated by the end (contract 5.6)', () => {
    it('finds nothing when the token of every ended session was terminated, after a relaunch too', () => {
      const { h, ledger, recs } = cleanRound();
      const relaunched: EngineHistory = {
        ...h,
        sessions: [...h.sessions, { playerId: P, token: TOKEN, sessionId: 's2' }],
        ends: [...h.ends, { playerId: P, token: TOKEN, sessionId: 's2', reply: queued }],
      };
      expect(check({ history: relaunched, ledger, records: recs }).findings).toEqual([]);
    });

    it('reports a token that was never terminated although nothing holds it, outside the closing line', () => {
      const { h, ledger, recs } = cleanRound();
      const r = check({ history: h, ledger, records: recs, terminatedTokens: new Set() });
      expect(r.findings.map((f) => [f.kind, f.detail])).toEqual([['not-terminated', expect.stringContaining('none of its work is pending or dead')]]);
      expect(r.tokens).toEqual({ total: 1, terminated: 0 });
      expect(closingLine(r)).toBe('lost: 0, doubled: 0, drift: 0');
    });

    it('lists what holds a token: a dead record, an end not accepted, a session never ended', () => {
      const h: EngineHistory = {
        ...history([tx('b1', 'debit', '10.00', [ok]), tx('w1', 'credit', '25.00', [queued], 'b1')]),
        sessions: [
          { playerId: P, token: TOKEN, sessionId: 's1' },
          { playerId: P, token: TOKEN, sessionId: 's2' },
          { playerId: P, token: TOKEN, sessionId: 's3' },
        ],
        ends: [
          { playerId: P, token: TOKEN, sessionId: 's1', reply: ok },
          { playerId: P, token: TOKEN, sessionId: 's2', reply: gone },
        ],
        unansweredLaunches: [{ token: TOKEN, sends: 2 }],
      };
      const ledger: LedgerSnapshot = { players: [{ playerId: P, balance: '1015.00' }], transactions: [applied('b1', 'debit', '10.00'), applied('w1', 'credit', '25.00')] };
      const r = check({ history: h, ledger, records: records([['b1', done], ['w1', { state: 'dead', compensation: null, reason: 'terminate first' }]]), terminatedTokens: new Set() });
      const detail = r.findings.find((f) => f.kind === 'not-terminated')?.detail;
      expect(detail).toContain('end of session s2 was answered no answer (ECONNREFUSED)');
      expect(detail).toContain('session s3 was never ended');
      expect(detail).toContain('dead record w1');
      expect(detail).toContain('2 launch send(s) on it got no answer');
      expect(detail).not.toContain('s1');
    });
  });

  describe('no record the engine was answered 200/202 for is failed (contract 5.3)', () => {
    it('reports an acknowledged win, refund or bet whose record is failed, but not a refused bet', () => {
      const h = history([
        tx('b1', 'debit', '10.00', [ok]),
        tx('w1', 'credit', '25.00', [queued], 'b1'),
        tx('b2', 'debit', '5.00', [gone, ok]),
        tx('f2', 'rollback', '5.00', [ok], 'b2'),
        tx('b3', 'debit', '7.00', [refused12]),
      ]);
      const ledger: LedgerSnapshot = {
        players: [{ playerId: P, balance: '985.00' }],
        transactions: [applied('b1', 'debit', '10.00'), applied('b2', 'debit', '5.00'), applied('f2', 'rollback', '5.00')],
      };
      const failed: RecordView = { state: 'failed', compensation: null };
      const r = check({ history: h, ledger, records: records([['b1', done], ['w1', failed], ['b2', failed], ['f2', failed], ['b3', failed]]) });
      expect(r.findings.filter((f) => f.kind === 'acknowledged-failed').map((f) => f.transactionId)).toEqual(['w1', 'b2', 'f2']);
      expect(r.findings.find((f) => f.transactionId === 'w1' && f.kind === 'acknowledged-failed')?.detail).toContain('202');
      // The lost win is counted on its own; the failed record is a difference of its own kind.
      expect(closingLine(r)).toBe('lost: 1, doubled: 0, drift: 1');
    });
  });

  it('reports a refund of a bet that is not the round\'s when it was accepted or reached the wallet, not when refused before it', () => {
    const foreign = (id: string, replies: Reply[]): EngineTransaction => ({ ...tx(id, 'rollback', '10.00', replies, 'b0'), foreignBet: true });
    const notFound: Reply = { kind: 'answer', status: 422, state: 'failed', code: 'BET_NOT_FOUND', walletCode: null };
    const walletSaid34: Reply = { kind: 'answer', status: 404, state: 'failed', code: 'WALLET_REJECTED', walletCode: 34 };
    const h = history([tx('b1', 'debit', '10.00', [ok]), foreign('x1', [notFound]), foreign('x2', [queued]), foreign('x3', [walletSaid34])]);
    const ledger: LedgerSnapshot = { players: [{ playerId: P, balance: '990.00' }], transactions: [applied('b1', 'debit', '10.00')] };
    const r = check({
      history: h,
      ledger,
      records: records([['b1', done], ['x1', null], ['x2', { state: 'dead', compensation: null }], ['x3', { state: 'failed', compensation: null }]]),
      calledTransactions: new Set(['b1', 'x2', 'x3']),
    });
    expect(r.findings.filter((f) => f.kind === 'foreign-refund').map((f) => f.transactionId)).toEqual(['x2', 'x3']);
  });

  it('reports a call refused for an ended session or a terminated token when the engine had not ended that session', () => {
    const ended: Reply = { kind: 'answer', status: 409, state: 'failed', code: 'SESSION_ENDED', walletCode: null };
    const deactivated: Reply = { kind: 'answer', status: 401, state: 'failed', code: 'WALLET_REJECTED', walletCode: 105 };
    const h = history([
      tx('b1', 'debit', '10.00', [ok]),
      tx('w1', 'credit', '5.00', [deactivated], 'b1'),
      tx('b2', 'debit', '3.00', [ended]),
      { ...tx('w3', 'credit', '5.00', [ended], 'b1'), endSent: true },
    ]);
    const ledger: LedgerSnapshot = { players: [{ playerId: P, balance: '990.00' }], transactions: [applied('b1', 'debit', '10.00')] };
    const r = check({ history: h, ledger, records: records([['b1', done], ['w1', { state: 'failed', compensation: null }], ['b2', null], ['w3', null]]) });
    expect(r.findings.filter((f) => f.kind === 'cut-off').map((f) => f.transactionId)).toEqual(['w1', 'b2']);
  });

  it('reports a refused win the wallet applied anyway, and ledger entries the engine never sent', () => {
    const rejected: Reply = { kind: 'answer', status: 409, state: 'failed', code: 'ROUND_CLOSED', walletCode: null };
    const h = history([tx('b1', 'debit', '10.00', [ok]), tx('w1', 'credit', '5.00', [rejected], 'b1')]);
    const ledger: LedgerSnapshot = {
      players: [{ playerId: P, balance: '1000.00' }],
      transactions: [applied('b1', 'debit', '10.00'), applied('w1', 'credit', '5.00'), applied('zz', 'credit', '5.00')],
    };
    const r = check({ history: h, ledger, records: records([['b1', done], ['w1', null]]) });
    expect(r.findings.map((f) => f.kind).sort()).toEqual(['drift', 'refused-but-applied', 'unexpected-ledger-entry']);
  });
});
