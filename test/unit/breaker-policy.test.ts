import { BREAKER_POLICY, OutcomeWindow, isOutageSignal, probeDelayMs } from '../../src/duties/breaker-policy';
import { Code } from '../../src/wallet/codes';

describe('isOutageSignal', () => {
  it.each([Code.UnknownError, Code.InternalServiceError, Code.InternalServiceError13, Code.ReadonlyTemp, Code.ConcurrentRequest])('counts code %i', (code) => {
    expect(isOutageSignal({ outcome: 'rejected', code })).toBe(true);
  });

  it('counts unknown outcomes, and not refusals that show the wallet answering', () => {
    expect(isOutageSignal({ outcome: 'unknown', code: null })).toBe(true);
    for (const code of [Code.SiteDisabled, Code.ClientError, Code.UserOffline, Code.TransactionNotFound, Code.TokenDeactivated, Code.InsufficientFunds]) {
      expect(isOutageSignal({ outcome: 'rejected', code })).toBe(false);
    }
    expect(isOutageSignal({ outcome: 'ok', code: Code.Success })).toBe(false);
  });
});

describe('OutcomeWindow', () => {
  const fail = (w: OutcomeWindow, at: number, subject: string, n = 1) => {
    for (let i = 0; i < n; i += 1) w.record(at, true, subject);
  };

  it('opens on enough failing calls across enough transactions, making most of the window', () => {
    const w = new OutcomeWindow();
    ['a', 'b', 'c', 'd', 'e'].forEach((s) => fail(w, 1000, s, 2));
    expect(w.verdict(1000)).toEqual({ open: true, calls: 10, failures: 10, subjects: 5 });
    for (let i = 0; i < 7; i += 1) w.record(1000, false, `ok-${i}`);
    expect(w.verdict(1000)).toMatchObject({ open: false, calls: 17 });
  });

  it('stays closed for one stuck transaction, however often it fails', () => {
    const w = new OutcomeWindow();
    fail(w, 1000, 'a', 50);
    expect(w.verdict(1000)).toMatchObject({ open: false, failures: 50, subjects: 1 });
  });

  it('stays closed while most calls succeed', () => {
    const w = new OutcomeWindow();
    ['a', 'b', 'c', 'd', 'e', 'f'].forEach((s) => fail(w, 1000, s, 2));
    for (let i = 0; i < 13; i += 1) w.record(1000, false, `ok-${i}`);
    expect(w.verdict(1000)).toMatchObject({ open: false, failures: 12, calls: 25 });
  });

  it('forgets what is older than the window', () => {
    const w = new OutcomeWindow();
    ['a', 'b', 'c', 'd', 'e'].forEach((s) => fail(w, 0, s, 2));
    expect(w.verdict(BREAKER_POLICY.windowMs + 1)).toEqual({ open: false, calls: 0, failures: 0, subjects: 0 });
  });

  it('counts a subject while any of its failures is in the window, and not after its last one left', () => {
    const w = new OutcomeWindow();
    fail(w, 0, 'a');
    fail(w, 0, 'b');
    fail(w, 6000, 'a');
    w.record(6000, false, 'ok');
    expect(w.verdict(6000)).toEqual({ open: false, calls: 4, failures: 3, subjects: 2 });
    expect(w.verdict(BREAKER_POLICY.windowMs + 1)).toEqual({ open: false, calls: 2, failures: 1, subjects: 1 });
    expect(w.verdict(BREAKER_POLICY.windowMs + 6001)).toEqual({ open: false, calls: 0, failures: 0, subjects: 0 });
  });

  it('keeps exact counts over a long busy run (samples leave one by one, the store is compacted)', () => {
    const w = new OutcomeWindow();
    const perMs = 3;
    const span = 3 * BREAKER_POLICY.windowMs;
    for (let at = 0; at < span; at += 1) {
      for (let i = 0; i < perMs; i += 1) w.record(at, i === 0, `t-${at % 7}`);
      if (at % 997 === 0) w.verdict(at);
    }
    const last = span - 1;
    expect(w.verdict(last)).toEqual({ open: false, calls: (BREAKER_POLICY.windowMs + 1) * perMs, failures: BREAKER_POLICY.windowMs + 1, subjects: 7 });
    expect(w.verdict(last + BREAKER_POLICY.windowMs)).toEqual({ open: false, calls: perMs, failures: 1, subjects: 1 });
  });
});

describe('probeDelayMs', () => {
  it('doubles from the first probe to the longest', () => {
    expect([1, 2, 3, 4, 5].map((n) => probeDelayMs(n))).toEqual([5000, 10_000, 20_000, 30_000, 30_000]);
  });
});
