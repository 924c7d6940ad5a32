import { closingLine, reconcile, type LedgerSnapshot, type RecordView } from '../../src/soak/checker';
import type { EngineHistory, EngineTransaction, Reply } from '../../src/soak/history';
import type { TransactionView as LedgerTransaction } from '../../src/sim';

const P = '18446744073709551615';
const ok: Reply = { kind: 'answer', status: 200, state: 'succeeded', code: undefined, walletCode: null };
const queued: Reply = { kind: 'answer', status: 202, state: 'pending', code: undefined, walletCode: null };
const unavailable: Reply = { kind: 'answer', status: 503, state: 'failed', code: 'WALLET_UNAVAILABLE', walletCode: null };
const refused12: Reply = { kind: 'answer', status: 500, state: 'failed', code: 'WALLET_REJECTED', walletCode: 12 };
const gone: Reply = { kind: 'no-answer', reason: 'ECONNREFUSED' };
const inProgress: Reply = { kind: 'answer', status: 409, state: 'failed', code: 'IN_PROGRESS', walletCode: null };

function tx(id: string, kind: EngineTransaction['kind'], amount: string, replies: Reply[], bet: string | null = null): EngineTransaction {
  return { transactionId: id, kind, playerId: P, sessionId: 's1', roundId: `r-${bet ?? id}`, amount, betTransactionId: bet, roundClosed: kind !== 'debit', afterEnd: false, replies };
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

const history = (transactions: EngineTransaction[]): EngineHistory => ({
  players: [{ playerId: P, currency: 'EUR', scale: 2, startBalance: '1000.00' }],
  transactions,
  ends: [],
});

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
    const r = reconcile({ history: h, ledger, terminatedTokens: new Set(), records: recs });
    expect(r.findings).toEqual([]);
    expect(closingLine(r)).toBe('lost: 0, doubled: 0, drift: 0');
    expect(r.players[0]).toMatchObject({ implied: '1015.00', ledger: '1015.00', winsAccepted: 1, winsCredited: 1 });
  });

  it('counts an acknowledged win the wallet never applied as lost (and the balance drifts)', () => {
    const { h, recs } = cleanRound();
    const ledger: LedgerSnapshot = { players: [{ playerId: P, balance: '990.00' }], transactions: [applied('b1', 'debit', '10.00')] };
    const r = reconcile({ history: h, ledger, terminatedTokens: new Set(), records: recs });
    expect(closingLine(r)).toBe('lost: 1, doubled: 0, drift: 1');
    expect(r.findings.find((f) => f.kind === 'lost-win')?.transactionId).toBe('w1');
  });

  it('counts an acknowledged refund the wallet never applied as lost', () => {
    const h = history([tx('b1', 'debit', '10.00', [ok]), tx('f1', 'rollback', '10.00', [queued], 'b1')]);
    const ledger: LedgerSnapshot = { players: [{ playerId: P, balance: '990.00' }], transactions: [applied('b1', 'debit', '10.00')] };
    const r = reconcile({ history: h, ledger, terminatedTokens: new Set(), records: records([['b1', done], ['f1', { state: 'dead', compensation: null, reason: 'retries exhausted' }]]) });
    expect(r.lost).toBe(1);
    expect(r.findings.find((f) => f.kind === 'lost-refund')?.detail).toContain('retries exhausted');
    expect(r.records.dead).toEqual([{ transactionId: 'f1', reason: 'retries exhausted' }]);
  });

  it('counts a transaction applied twice as doubled', () => {
    const { h, recs } = cleanRound();
    const ledger: LedgerSnapshot = {
      players: [{ playerId: P, balance: '1040.00' }],
      transactions: [applied('b1', 'debit', '10.00'), applied('w1', 'credit', '25.00', { timesApplied: 2 })],
    };
    const r = reconcile({ history: h, ledger, terminatedTokens: new Set(), records: recs });
    expect(closingLine(r)).toBe('lost: 0, doubled: 1, drift: 1');
  });

  it('counts a refused debit with an unknown outcome that was applied and not rolled back as lost', () => {
    const h = history([tx('b1', 'debit', '10.00', [unavailable])]);
    const ledger: LedgerSnapshot = { players: [{ playerId: P, balance: '990.00' }], transactions: [applied('b1', 'debit', '10.00')] };
    const r = reconcile({ history: h, ledger, terminatedTokens: new Set(), records: records([['b1', { state: 'dead', compensation: { transaction_id: 'c1', state: 'dead' } }]]) });
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
    const r = reconcile({ history: h, ledger, terminatedTokens: new Set(), records: records([['b1', comp('c1')], ['b2', comp('c2')]]) });
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
    const r = reconcile({ history: h, ledger, terminatedTokens: new Set(), records: recs });
    expect(closingLine(r)).toBe('lost: 0, doubled: 0, drift: 1');
    expect(r.findings[0]?.detail).toContain('off by 0.01');
  });

  it('takes a duplicate that waited (IN_PROGRESS) and then got the stored answer as one acceptance', () => {
    const h = history([tx('b1', 'debit', '10.00', [ok, inProgress, ok]), tx('w1', 'credit', '0', [ok], 'b1')]);
    const ledger: LedgerSnapshot = {
      players: [{ playerId: P, balance: '990.00' }],
      transactions: [applied('b1', 'debit', '10.00'), applied('w1', 'credit', '0.00')],
    };
    expect(reconcile({ history: h, ledger, terminatedTokens: new Set(), records: records([['b1', done], ['w1', done]]) }).findings).toEqual([]);
  });

  it('flags records that are not final and answers that contradict each other, outside the closing line', () => {
    const refusedWin: Reply = { kind: 'answer', status: 409, state: 'failed', code: 'ROUND_CLOSED', walletCode: null };
    const h = history([tx('b1', 'debit', '10.00', [ok]), tx('w1', 'credit', '25.00', [queued, refusedWin], 'b1')]);
    const ledger: LedgerSnapshot = {
      players: [{ playerId: P, balance: '1015.00' }],
      transactions: [applied('b1', 'debit', '10.00'), applied('w1', 'credit', '25.00')],
    };
    const r = reconcile({ history: h, ledger, terminatedTokens: new Set(), records: records([['b1', done], ['w1', { state: 'pending', compensation: null }]]) });
    expect(r.findings.map((f) => f.kind).sort()).toEqual(['inconsistent-answers', 'not-final']);
    expect(closingLine(r)).toBe('lost: 0, doubled: 0, drift: 0');
  });

  it('resolves a transaction the engine never heard back about by the gateway record', () => {
    const h = history([tx('b1', 'debit', '10.00', [gone, gone])]);
    const ledger: LedgerSnapshot = { players: [{ playerId: P, balance: '990.00' }], transactions: [applied('b1', 'debit', '10.00')] };
    const r = reconcile({ history: h, ledger, terminatedTokens: new Set(), records: records([['b1', done]]) });
    expect(r.findings.map((f) => f.kind)).toEqual(['unanswered']);
    expect(r.players[0]?.implied).toBe('990.00');
  });

  it("reports a record that disagrees with the wallet (failed, yet credited), outside the closing line", () => {
    const { h, ledger } = cleanRound();
    const r = reconcile({ history: h, ledger, terminatedTokens: new Set(), records: records([['b1', done], ['w1', { state: 'failed', compensation: null }]]) });
    expect(r.findings.map((f) => f.kind)).toEqual(['record-disagrees']);
    expect(closingLine(r)).toBe('lost: 0, doubled: 0, drift: 0');
  });

  it('reports a bet in an ended session that was accepted or reached the wallet', () => {
    const late = (id: string, replies: Reply[]): EngineTransaction => ({ ...tx(id, 'debit', '1.00', replies), afterEnd: true });
    const h = history([late('e1', [ok]), late('e2', [refused12]), late('e3', [refused12])]);
    const ledger: LedgerSnapshot = {
      players: [{ playerId: P, balance: '998.00' }],
      transactions: [applied('e1', 'debit', '1.00'), applied('e2', 'debit', '1.00')],
    };
    const r = reconcile({ history: h, ledger, terminatedTokens: new Set(), records: records([['e1', done], ['e2', null], ['e3', null]]) });
    expect(r.findings.filter((f) => f.kind === 'accepted-after-end').map((f) => f.transactionId)).toEqual(['e1', 'e2']);
  });

  it('reports an accepted end (200 or 202) whose token the wallet never terminated', () => {
    const { h, ledger, recs } = cleanRound();
    const ends = [
      { playerId: P, token: 'tok-a', reply: ok },
      { playerId: P, token: 'tok-b', reply: queued },
      { playerId: P, token: 'tok-c', reply: gone },
    ];
    const r = reconcile({ history: { ...h, ends }, ledger, records: recs, terminatedTokens: new Set(['tok-a']) });
    expect(r.findings.map((f) => [f.kind, f.detail])).toEqual([['not-terminated', expect.stringContaining('never terminated')]]);
    expect(closingLine(r)).toBe('lost: 0, doubled: 0, drift: 0');
  });

  it('reports a refused win the wallet applied anyway, and ledger entries the engine never sent', () => {
    const rejected: Reply = { kind: 'answer', status: 409, state: 'failed', code: 'ROUND_CLOSED', walletCode: null };
    const h = history([tx('b1', 'debit', '10.00', [ok]), tx('w1', 'credit', '5.00', [rejected], 'b1')]);
    const ledger: LedgerSnapshot = {
      players: [{ playerId: P, balance: '1000.00' }],
      transactions: [applied('b1', 'debit', '10.00'), applied('w1', 'credit', '5.00'), applied('zz', 'credit', '5.00')],
    };
    const r = reconcile({ history: h, ledger, terminatedTokens: new Set(), records: records([['b1', done], ['w1', null]]) });
    expect(r.findings.map((f) => f.kind).sort()).toEqual(['drift', 'refused-but-applied', 'unexpected-ledger-entry']);
  });
});
