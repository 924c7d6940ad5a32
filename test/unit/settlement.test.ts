import { compensationTransactionId } from '../../src/duties/compensation-id';
import { afterInlineAttempt, afterRetryAttempt, afterTriage, errorFor, firstTryIsInline, inlineCallWindowMs, type InlineAttemptInput, type RetryAttemptInput } from '../../src/duties/settlement';
import type { AttemptResult } from '../../src/duties/retry-policy';
import { Code } from '../../src/wallet/codes';
import type { WalletOutcome, WalletSuccess } from '../../src/wallet/protocol';

const success = (balance: string): WalletOutcome => ({
  kind: 'ok',
  httpStatus: 200,
  latencyMs: 1,
  response: { balance, code: 1, status: true, message: '', request_id: 'w', token: 't', player_id: '1', game_id: 'g', site_id: '1', provider_id: '1' } as WalletSuccess,
});
const rejected = (code: number): WalletOutcome => ({ kind: 'rejected', code, httpStatus: 500, message: 'no', walletRequestId: 'w', latencyMs: 1 });
const unknown: WalletOutcome = { kind: 'unknown', reason: 'timeout', detail: 'deadline', latencyMs: 5000 };

const credit = { kind: 'credit', isCompensation: false, transactionId: 'w-1', referenceTransactionId: 'b-1' } as const;
const debit = { kind: 'debit', isCompensation: false } as const;
const compensation = { kind: 'rollback', isCompensation: true, transactionId: compensationTransactionId('b-1'), referenceTransactionId: 'b-1' } as const;
const lateCompensation = { ...compensation, transactionId: compensationTransactionId('b-1', 1) } as const;
const refundRecord = { kind: 'rollback', isCompensation: false, transactionId: 'r-1', referenceTransactionId: 'b-1' } as const;
const inline = (over: Partial<InlineAttemptInput>): InlineAttemptInput => ({ record: credit, outcome: success('1.00'), unit: 'ms', now: 1000, ...over });
const retry = (over: Partial<RetryAttemptInput>): RetryAttemptInput => ({ record: credit, priorHistory: [12], attempts: 2, outcome: success('1.00'), unit: 'ms', now: 1000, ...over });

describe('afterInlineAttempt', () => {
  it('settles a success with the balance on the record and the session', () => {
    const next = afterInlineAttempt(inline({ outcome: success('12.34') }));
    expect(next).toEqual({
      kind: 'settle',
      update: expect.objectContaining({ state: 'succeeded', balance: '12.34', sessionBalance: '12.34', lastWalletCode: 1, history: [1], attempts: 1 }),
    });
  });


  it.each([Code.UnknownError, Code.InternalServiceError, Code.InternalServiceError13, Code.ClientError])('compensates a debit answered %i', (code) => {
    expect(afterInlineAttempt(inline({ record: debit, outcome: rejected(code) }))).toMatchObject({
      kind: 'compensate',
      error: { code: 'WALLET_REJECTED', walletCode: code },
      progress: { attempts: 1, lastWalletCode: code, history: [code] },
    });
  });

  it('compensates a debit whose outcome is unknown', () => {
    expect(afterInlineAttempt(inline({ record: debit, outcome: unknown }))).toMatchObject({
      kind: 'compensate',
      error: { code: 'WALLET_UNAVAILABLE', walletCode: null, httpStatus: 503 },
      progress: { lastWalletCode: null, history: ['unknown'] },
    });
  });

  it('fails a debit refused with another code and gives its round back', () => {
    expect(afterInlineAttempt(inline({ record: debit, outcome: rejected(Code.InsufficientFunds) }))).toMatchObject({
      kind: 'settle',
      update: { state: 'failed', releaseRound: true, error: { walletCode: Code.InsufficientFunds, httpStatus: 422 } },
    });
    expect(afterInlineAttempt(inline({ record: debit, outcome: rejected(Code.SiteDisabled) }))).toMatchObject({ update: { state: 'failed' } });
  });

  it('retries a credit on a listed code with the spec delay for the retry number', () => {
    expect(afterInlineAttempt(inline({ outcome: rejected(Code.InternalServiceError), now: 10_000 }))).toEqual({
      kind: 'retry',
      delayMs: 301,
      update: expect.objectContaining({ state: 'pending', nextCheckAt: 10_301, history: [12], attempts: 1 }),
    });
    expect(afterInlineAttempt(inline({ outcome: unknown }))).toMatchObject({ kind: 'retry', delayMs: 301 });
  });

  it('settles an inline success; a refund\'s also compensates the debit that named it its compensation meanwhile', () => {
    const win = afterInlineAttempt(inline({ outcome: success('7.00') }));
    expect(win.kind === 'settle' ? win.update.debitState : 'not settled').toBeUndefined();
    expect(afterInlineAttempt(inline({ record: refundRecord, outcome: success('7.00') }))).toMatchObject({
      kind: 'settle',
      update: { state: 'succeeded', debitState: 'compensated' },
    });
  });

  it('fails a credit refused with a final code before the engine was answered, and gives the round back', () => {
    expect(afterInlineAttempt(inline({ outcome: rejected(Code.RoundClosed) }))).toMatchObject({ kind: 'settle', update: { state: 'failed', releaseRound: true } });
  });
});

describe('afterRetryAttempt', () => {
  it('settles a success; a successful rollback also compensates its debit', () => {
    expect(afterRetryAttempt(retry({ outcome: success('7.00') }))).toMatchObject({ kind: 'settle', update: { state: 'succeeded', lastWalletCode: 1, history: [12, 1], attempts: 2 } });
    const next = afterRetryAttempt(retry({ record: compensation, outcome: success('5') }));
    expect(next.kind === 'settle' && next.update.debitState).toBe('compensated');
  });

  it('retries with the spec delay for the retry number', () => {
    expect(afterRetryAttempt(retry({ outcome: unknown, priorHistory: [12, 12], attempts: 3 }))).toMatchObject({ kind: 'retry', delayMs: 602 });
  });

  it('never fails acknowledged work: a final code after the engine was answered makes it dead (contract 5.3)', () => {
    expect(afterRetryAttempt(retry({ outcome: rejected(Code.TokenDeactivated) }))).toMatchObject({
      kind: 'settle',
      update: { state: 'dead', error: { walletCode: Code.TokenDeactivated }, note: expect.stringContaining('after the engine was answered') },
    });
    expect(afterRetryAttempt(retry({ record: refundRecord, outcome: rejected(Code.RoundClosed) }))).toMatchObject({
      update: { state: 'dead', debitState: 'dead' },
    });
  });

  it('ends dead after the budget', () => {
    const next = afterRetryAttempt(retry({ outcome: rejected(12), priorHistory: Array(10).fill(12), attempts: 11 }));
    expect(next).toMatchObject({ kind: 'settle', update: { state: 'dead', note: expect.stringContaining('10 retries') } });
    const limited = afterRetryAttempt(retry({ outcome: rejected(34), priorHistory: [34, 34, 34], attempts: 4 }));
    expect(limited).toMatchObject({ kind: 'settle', update: { state: 'dead', note: expect.stringContaining('34/39') } });
  });

  it('sends a compensation exhausted on 34 to status triage, and one refused finally to an operator', () => {
    expect(afterRetryAttempt(retry({ record: compensation, outcome: rejected(34), priorHistory: [34, 34, 34], attempts: 4 }))).toMatchObject({
      kind: 'triage',
      target: 'debit',
    });
    expect(afterRetryAttempt(retry({ record: compensation, outcome: rejected(Code.RoundClosed) }))).toMatchObject({
      kind: 'settle',
      update: { state: 'dead', debitState: 'dead' },
    });
  });

  it('sends a compensation whose 10 retries ran out on a 34 to status triage too; on any other answer it is dead', () => {
    const spent: AttemptResult[] = ['unknown', 12, 'unknown', 12, 12, 'unknown', 34, 34];
    expect(afterRetryAttempt(retry({ record: compensation, outcome: rejected(34), priorHistory: [...spent, 34, 34], attempts: 11 }))).toMatchObject({
      kind: 'triage',
      target: 'debit',
      notApplied: { debitState: 'compensated' },
    });
    expect(afterRetryAttempt(retry({ record: compensation, outcome: rejected(12), priorHistory: [...spent, 34, 12], attempts: 11 }))).toMatchObject({
      kind: 'settle',
      update: { state: 'dead', note: expect.stringContaining('10 retries') },
    });
    // a credit has no debit to ask about
    expect(afterRetryAttempt(retry({ outcome: rejected(34), priorHistory: [...spent, 34, 12], attempts: 11 }))).toMatchObject({ kind: 'settle', update: { state: 'dead' } });
  });

  it('asks status before giving up on a credit whose earlier attempt had an unknown outcome', () => {
    const next = afterRetryAttempt(retry({ outcome: rejected(Code.TokenDeactivated), priorHistory: ['unknown'], attempts: 2 }));
    expect(next).toMatchObject({ kind: 'triage', target: 'self', notApplied: { state: 'dead' } });
    // without an unknown outcome before it, a final refusal is final
    expect(afterRetryAttempt(retry({ outcome: rejected(Code.TokenDeactivated), priorHistory: [12], attempts: 2 }))).toMatchObject({ kind: 'settle' });
  });
});

describe('an engine refund of a bet refused for good', () => {
  const nothing = { kind: 'settle', update: { state: 'succeeded', lastWalletCode: 1, error: null, note: expect.stringContaining('nothing reversed'), onlyIfBetRefused: true } };

  it('ends succeeded, nothing reversed, whatever its failed try met (inline or a retry), the store checking the bet in the same step', () => {
    expect(afterRetryAttempt(retry({ record: refundRecord, outcome: rejected(Code.TransactionNotFound), betRefused: true }))).toMatchObject(nothing);
    expect(afterRetryAttempt(retry({ record: refundRecord, outcome: unknown, betRefused: true }))).toMatchObject({ ...nothing, update: { ...nothing.update, attempts: 2 } });
    expect(afterInlineAttempt(inline({ record: { kind: 'rollback' }, outcome: rejected(Code.TransactionNotFound), betRefused: true }))).toMatchObject(nothing);
  });

  it('is no rule for a compensation, a credit or a success', () => {
    expect(afterRetryAttempt(retry({ record: compensation, outcome: rejected(Code.TransactionNotFound), betRefused: true }))).toMatchObject({ kind: 'retry' });
    expect(afterRetryAttempt(retry({ outcome: rejected(Code.InternalServiceError), betRefused: true }))).toMatchObject({ kind: 'retry' });
    expect(afterRetryAttempt(retry({ record: refundRecord, outcome: success('2.00'), betRefused: true }))).toMatchObject({ update: { state: 'succeeded', debitState: 'compensated' } });
  });
});

describe('an engine refund standing in for its bet\'s compensation, whose 34/39 retries ran out', () => {
  const exhausted = afterRetryAttempt(retry({ record: refundRecord, outcome: rejected(Code.TransactionNotFound), priorHistory: [34, 34, 34], attempts: 4, standsIn: true }));
  const triage = exhausted.kind === 'triage' ? exhausted : undefined;

  it('asks wallet status of its bet, as the compensation would (contract 5.4)', () => {
    expect(exhausted).toMatchObject({ kind: 'triage', target: 'debit' });
    expect(triage?.onDoubt).toBeUndefined();
  });

  it('ends succeeded, nothing reversed, its bet compensated, when status says the bet was never applied, the store checking it still stands in', () => {
    expect(afterTriage(triage!, rejected(Code.TransactionNotFound))).toMatchObject({
      state: 'succeeded',
      lastWalletCode: Code.Success,
      error: null,
      note: expect.stringContaining('nothing reversed'),
      debitState: 'compensated',
      onlyIfStandsIn: true,
      history: [34, 34, 34, 34],
    });
  });

  it('is never succeeded while the bet may be held: status "applied" or no clear answer leaves it dead for an operator', () => {
    for (const status of [success('1'), unknown, rejected(Code.InternalServiceError)]) {
      const update = afterTriage(triage!, status);
      expect(update).toMatchObject({ state: 'dead', debitState: 'dead' });
      expect(update.onlyIfStandsIn).toBeUndefined();
    }
  });

  it('is no rule for a refund that does not stand in, nor for one whose last answer is not 34/39', () => {
    expect(afterRetryAttempt(retry({ record: refundRecord, outcome: rejected(Code.TransactionNotFound), priorHistory: [34, 34, 34], attempts: 4 }))).toMatchObject({ kind: 'settle', update: { state: 'dead' } });
    const spent: AttemptResult[] = [12, 12, 12, 12, 12, 12, 12, 12, 12];
    expect(afterRetryAttempt(retry({ record: refundRecord, outcome: rejected(12), priorHistory: [...spent, 34], attempts: 11, standsIn: true }))).toMatchObject({ kind: 'settle', update: { state: 'dead' } });
  });
});

describe('afterTriage', () => {
  const exhausted = afterRetryAttempt(retry({ record: compensation, outcome: rejected(34), priorHistory: [34, 34, 34], attempts: 4 }));
  const compensationTriage = exhausted.kind === 'triage' ? exhausted : undefined;

  it('compensates when the debit was never applied', () => {
    expect(afterTriage(compensationTriage!, rejected(Code.TransactionNotFound))).toMatchObject({ state: 'failed', debitState: 'compensated' });
  });

  it('watches the debit when status says it is applied or gives no clear answer (its re-checks roll it back with a second id)', () => {
    for (const status of [success('1'), unknown, rejected(Code.InternalServiceError)]) {
      expect(afterTriage(compensationTriage!, status)).toMatchObject({ state: 'failed', debitState: 'compensated', note: expect.stringContaining('the debit is watched') });
    }
  });

  it('leaves a second compensation to an operator when the debit is applied or the answer is unclear', () => {
    const late = afterRetryAttempt(retry({ record: lateCompensation, outcome: rejected(34), priorHistory: [34, 34, 34], attempts: 4 }));
    expect(late).toMatchObject({ kind: 'triage', target: 'debit' });
    if (late.kind !== 'triage') return;
    expect(afterTriage(late, success('1'))).toMatchObject({ state: 'dead', debitState: 'dead' });
    expect(afterTriage(late, unknown)).toMatchObject({ state: 'dead', debitState: 'dead', note: expect.stringContaining('inconclusive') });
  });

  const lostCredit = afterRetryAttempt(retry({ outcome: rejected(Code.TokenDeactivated), priorHistory: ['unknown'], attempts: 2 }));
  const selfTriage = lostCredit.kind === 'triage' ? lostCredit : undefined;

  it('settles a credit the wallet reports applied as succeeded', () => {
    expect(afterTriage(selfTriage!, success('42.00'))).toMatchObject({ state: 'succeeded', lastWalletCode: 1, balance: '42.00', sessionBalance: '42.00', error: null });
  });

  it('keeps the refusal (dead: the engine was answered) when the wallet never saw it, and hands unclear answers to an operator', () => {
    expect(afterTriage(selfTriage!, rejected(Code.TransactionNotFound))).toMatchObject({ state: 'dead' });
    expect(afterTriage(selfTriage!, rejected(Code.InternalServiceError))).toMatchObject({ state: 'dead' });
  });

  it('settles a refund standing in for a compensation together with its debit', () => {
    const refund = afterRetryAttempt(retry({ record: refundRecord, outcome: rejected(Code.RoundClosed), priorHistory: ['unknown'], attempts: 2 }));
    expect(refund.kind).toBe('triage');
    if (refund.kind === 'triage') expect(afterTriage(refund, success('1'))).toMatchObject({ state: 'succeeded', debitState: 'compensated' });
  });
});

describe('errorFor', () => {
  it('maps codes outside the spec table to 422', () => {
    expect(errorFor(rejected(777))).toMatchObject({ code: 'WALLET_REJECTED', walletCode: 777, httpStatus: 422 });
    expect(errorFor(rejected(Code.SiteDisabled))).toMatchObject({ httpStatus: 403 });
  });
});

describe('firstTryIsInline', () => {
  const engineCall = { deferred: false, queued: false, isCompensation: false };
  it('is true for an engine call claimed for its inline try, false for what only a worker sends', () => {
    expect(firstTryIsInline(engineCall)).toBe(true);
    expect(firstTryIsInline({ ...engineCall, deferred: true })).toBe(false);
    expect(firstTryIsInline({ ...engineCall, queued: true })).toBe(false);
    expect(firstTryIsInline({ ...engineCall, isCompensation: true })).toBe(false);
  });
});

describe('inlineCallWindowMs', () => {
  it('covers the wallet call and the margin, and the write-ahead WAIT only when replicas are asked for', () => {
    expect(inlineCallWindowMs({ WALLET_TIMEOUT_MS: 5000, REDIS_MIN_REPLICAS: 0, REDIS_WAIT_MS: 500 })).toBe(10_000);
    expect(inlineCallWindowMs({ WALLET_TIMEOUT_MS: 5000, REDIS_MIN_REPLICAS: 1, REDIS_WAIT_MS: 500 })).toBe(10_500);
    // A WAIT longer than the margin alone would let the sweeper take over a call still out.
    expect(inlineCallWindowMs({ WALLET_TIMEOUT_MS: 1000, REDIS_MIN_REPLICAS: 2, REDIS_WAIT_MS: 8000 })).toBe(14_000);
  });
});
