import { compareLedger, ledgerLines, type LedgerChange, type LedgerCheckInput, type RecordState } from '../../src/soak/ledger-checker';
import type { TransactionView } from '../../src/sim';
import { parseSizes, soakDefaults, UsageError } from '../../src/soak/cli';

const CREATED = 1_795_000_000_000;

function record(id: string, over: Partial<RecordState> = {}): RecordState {
  return {
    wallet: 'default',
    transactionId: id,
    createdAt: CREATED,
    changeNo: 2,
    kind: 'debit',
    state: 'succeeded',
    amount: '10.00',
    currency: 'EUR',
    playerId: '18446744073709551615',
    siteId: '4294967297',
    sessionId: 's1',
    roundId: `r-${id}`,
    walletRoundId: `w-${id}`,
    referenceId: null,
    isCompensation: false,
    compensationId: null,
    attempts: 1,
    lastWalletCode: 1,
    balance: '90.00',
    resolution: null,
    note: null,
    ...over,
  };
}

/** The changes 1..n of a record, the last one equal to it. */
function changesOf(r: RecordState, numbers: readonly number[] = Array.from({ length: r.changeNo }, (_, i) => i + 1)): LedgerChange[] {
  return numbers.map((n) => ({ ...r, changeNo: n, state: n === r.changeNo ? r.state : 'pending', outboxId: `0:${r.transactionId}-${n}` }));
}

function applied(id: string, op: TransactionView['op'], over: Partial<TransactionView> = {}): TransactionView {
  return {
    transactionId: id,
    op,
    playerId: '18446744073709551615',
    roundId: `r-${id}`,
    amount: '10.00',
    referenceTransactionId: undefined,
    roundClosed: false,
    applied: true,
    rolledBack: false,
    rolledBackBy: undefined,
    timesApplied: 1,
    at: CREATED,
    ...over,
  };
}

/** A bet and its win, equal everywhere; `over` changes one side. */
function equalInput(over: Partial<LedgerCheckInput> = {}): LedgerCheckInput {
  const bet = record('bet-1');
  const win = record('win-1', { kind: 'credit', referenceId: 'bet-1', roundId: 'r-bet-1', balance: '110.00' });
  return {
    wallet: 'default',
    redis: [bet, win],
    changes: [...changesOf(bet), ...changesOf(win)],
    newest: [bet, win],
    historyIds: new Set(['bet-1', 'win-1']),
    books: [applied('bet-1', 'debit'), applied('win-1', 'credit', { referenceTransactionId: 'bet-1' })],
    ...over,
  };
}

const kinds = (input: LedgerCheckInput): string[] => compareLedger(input).findings.map((f) => f.kind);

describe('the ledger against the records and the wallet', () => {
  it('finds nothing when every record is in the ledger once, with its changes 1..n, and the books agree', () => {
    const result = compareLedger(equalInput());
    expect(result.findings).toEqual([]);
    expect(result.counts).toEqual({ redisRecords: 2, ledgerRecords: 2, changes: 4 });
    expect(ledgerLines([{ wallet: 'default', comparison: result }])).toEqual([
      'ledger: equal (2 records in Redis, 2 in the ledger with 4 changes; wallet: 2 final records held against the books, 2 applied transactions found)',
    ]);
  });

  it('ledger-missing: a record Redis holds that the ledger never got', () => {
    const input = equalInput();
    const late = record('win-2', { kind: 'credit', state: 'pending', changeNo: 1 });
    expect(kinds({ ...input, redis: [...input.redis, late] })).toEqual(['ledger-missing']);
  });

  it('ledger-differs: the newest change in ledger_transactions, or the last row of ledger_changes, is not the record Redis holds', () => {
    const input = equalInput();
    const stale = { ...(input.newest[0] as RecordState), attempts: 2, amount: '10.0' };
    const found = compareLedger({ ...input, newest: [stale, input.newest[1] as RecordState] }).findings;
    expect(found).toEqual([{ kind: 'ledger-differs', transactionId: 'bet-1', detail: 'ledger_transactions: amount: ledger 10.0, redis 10.00; attempts: ledger 2, redis 1' }]);

    const changes = input.changes.map((c) => (c.transactionId === 'win-1' && c.changeNo === 2 ? { ...c, state: 'failed' } : c));
    expect(compareLedger({ ...input, changes }).findings.map((f) => [f.kind, f.detail])).toEqual([
      ['ledger-differs', 'its last change in ledger_changes: state: ledger failed, redis succeeded'],
    ]);
  });

  it('ledger-differs: a record with changes but no row in ledger_transactions', () => {
    const input = equalInput();
    expect(kinds({ ...input, newest: [input.newest[1] as RecordState] })).toEqual(['ledger-differs']);
  });

  it('ledger-change-missing: change numbers not 1..n, n the record’s own count (a gap, or the newest not there yet)', () => {
    const input = equalInput();
    const bet = input.redis[0] as RecordState;
    const gap = [...changesOf(bet, [2]), ...input.changes.filter((c) => c.transactionId !== 'bet-1')];
    expect(compareLedger({ ...input, changes: gap }).findings.map((f) => [f.kind, f.detail])).toEqual([['ledger-change-missing', 'changes 1 of 2 are not in ledger_changes']]);

    const moved = { ...bet, changeNo: 3, state: 'compensated' };
    const found = compareLedger({ ...input, redis: [moved, input.redis[1] as RecordState] }).findings;
    expect(found.map((f) => f.kind)).toEqual(['ledger-differs', 'ledger-change-missing']);
    expect(found[1]?.detail).toBe('changes 3 of 3 are not in ledger_changes');
  });

  it('ledger-change-extra: a change Redis never made', () => {
    const input = equalInput();
    const extra = { ...(changesOf(input.redis[0] as RecordState)[1] as LedgerChange), changeNo: 3, outboxId: '0:x' };
    expect(compareLedger({ ...input, changes: [...input.changes, extra] }).findings.map((f) => [f.kind, f.detail])).toEqual([
      ['ledger-change-extra', 'ledger_changes holds changes 3; Redis made 2'],
    ]);
  });

  it('ledger-twice: one record under two creation times, or one outbox entry in two rows', () => {
    const input = equalInput();
    const again = { ...(input.newest[0] as RecordState), createdAt: CREATED + 5 };
    const againChanges = changesOf(again).map((c) => ({ ...c, outboxId: `1:${c.changeNo}` }));
    expect(compareLedger({ ...input, newest: [...input.newest, again], changes: [...input.changes, ...againChanges] }).findings.map((f) => [f.kind, f.detail])).toEqual([
      ['ledger-twice', 'the ledger holds 2 records of it, Redis 1'],
    ]);

    const copied = input.changes.map((c) => (c.transactionId === 'win-1' && c.changeNo === 1 ? { ...c, outboxId: '0:bet-1-1' } : c));
    expect(compareLedger({ ...input, changes: copied }).findings.map((f) => [f.kind, f.detail])).toEqual([['ledger-twice', 'outbox entry 0:bet-1-1 is in 2 rows (changes 1, 1)']]);
  });

  it('ledger-unknown: a ledger record Redis does not hold, saying whether the engine sent its id', () => {
    const input = equalInput();
    const stray = record('ghost-1', { kind: 'credit', state: 'failed', changeNo: 1 });
    const found = compareLedger({ ...input, newest: [...input.newest, stray], changes: [...input.changes, ...changesOf(stray)] }).findings;
    expect(found.map((f) => [f.kind, f.detail])).toEqual([
      ['ledger-unknown', 'credit failed is in the ledger, not in Redis; the engine never sent that id'],
    ]);
  });

  describe('the wallet side', () => {
    it('ledger-wallet-disagrees: a succeeded win the wallet never applied, a failed one it applied, a failed bet it holds', () => {
      const input = equalInput();
      expect(compareLedger({ ...input, books: [applied('bet-1', 'debit')] }).findings.map((f) => [f.kind, f.detail])).toEqual([
        ['ledger-wallet-disagrees', 'credit is succeeded in the ledger; the wallet never applied it'],
      ]);

      const failedWin = { ...(input.redis[1] as RecordState), state: 'failed' };
      const failedBet = { ...(input.redis[0] as RecordState), state: 'failed' };
      const redis = [failedBet, failedWin];
      const found = compareLedger({ ...input, redis, newest: redis, changes: [...changesOf(failedBet), ...changesOf(failedWin)] }).findings;
      expect(found.map((f) => [f.kind, f.transactionId, f.detail])).toEqual([
        ['ledger-wallet-disagrees', 'bet-1', 'debit is failed in the ledger; the wallet applied it'],
        ['ledger-wallet-disagrees', 'win-1', 'credit is failed in the ledger; the wallet applied it'],
      ]);
    });

    it('takes a compensated or failed bet the wallet rolled back, and a rollback the wallet took as a no-op (its debit reversed by another)', () => {
      const bet = record('bet-1', { state: 'compensated', changeNo: 4, compensationId: 'gw-rb-1' });
      const compensation = record('gw-rb-1', { kind: 'rollback', isCompensation: true, referenceId: 'bet-1' });
      const refund = record('refund-1', { kind: 'rollback', referenceId: 'bet-1' });
      const redis = [bet, compensation, refund];
      const input: LedgerCheckInput = {
        wallet: 'default',
        redis,
        newest: redis,
        changes: redis.flatMap((r) => changesOf(r)),
        historyIds: new Set(['bet-1', 'refund-1']),
        // The engine's refund reversed the debit; the compensation found it reversed already.
        books: [applied('bet-1', 'debit', { rolledBack: true, rolledBackBy: 'refund-1' }), applied('refund-1', 'rollback', { referenceTransactionId: 'bet-1' })],
      };
      expect(compareLedger(input).findings).toEqual([]);
      expect(compareLedger(input).wallet).toEqual({ finalRecords: 3, booksTransactions: 2 });
    });

    it('ledger-wallet-missing: a transaction the wallet applied that the ledger has no record of', () => {
      const input = equalInput();
      expect(compareLedger({ ...input, books: [...input.books, applied('win-9', 'credit')] }).findings.map((f) => [f.kind, f.detail])).toEqual([
        ['ledger-wallet-missing', 'credit 10.00 applied by the wallet has no record in the ledger'],
      ]);
    });
  });

  it('prints the count by kind and each difference, naming the wallet when there are several', () => {
    const input = equalInput();
    const a = compareLedger({ ...input, books: [applied('bet-1', 'debit')] });
    const b = compareLedger({ ...input, redis: [...input.redis, record('win-2', { changeNo: 1 })] });
    expect(ledgerLines([{ wallet: 'casino-a', comparison: a }, { wallet: 'casino-b', comparison: b }])).toEqual([
      'ledger: 2 differences (ledger-missing 1, ledger-wallet-disagrees 1; 5 records in Redis, 4 in the ledger with 8 changes; wallet: 4 final records held against the books, 3 applied transactions found)',
      '  ! ledger-wallet-disagrees: wallet casino-a tx win-1: credit is succeeded in the ledger; the wallet never applied it',
      '  ! ledger-missing: wallet casino-b tx win-2: debit succeeded (1 changes) is in Redis, not in the ledger',
    ]);
  });
});

describe('--ledger-outage', () => {
  it('turns the ledger on with the seconds of its cut (0: no cut), and is off unless given', () => {
    expect(parseSizes([], soakDefaults(1))).not.toHaveProperty('ledgerOutageSeconds');
    expect(parseSizes(['--ledger-outage', '20'], soakDefaults(1))).toMatchObject({ ledgerOutageSeconds: 20 });
    expect(parseSizes(['--ledger-outage', '0'], soakDefaults(1))).toMatchObject({ ledgerOutageSeconds: 0 });
    expect(() => parseSizes(['--ledger-outage', '-1'], soakDefaults(1))).toThrow(UsageError);
  });
});
