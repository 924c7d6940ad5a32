import { MAX_RETRIES, decideRetry, retryDelayMs, retryPlan, type AttemptResult } from '../../src/duties/retry-policy';
import { Code, WALLET_CODES, retryClass } from '../../src/wallet/codes';

describe('retryDelayMs', () => {
  it.each([
    [1, 301],
    [2, 477],
    [3, 602],
    [4, 699],
    [5, 778],
    [6, 845],
    [7, 903],
    [8, 954],
    [9, 1000],
    [10, 1041],
  ])('delay(%i) = %i ms', (n, ms) => {
    expect(retryDelayMs(n, 'ms')).toBe(ms);
  });

  it('reads the table in seconds when configured so', () => {
    expect(retryDelayMs(1, 's')).toBe(301_000);
    expect(retryDelayMs(9, 's')).toBe(1_000_000);
  });

  it('refuses retry numbers below 1', () => {
    expect(() => retryDelayMs(0, 'ms')).toThrow(RangeError);
    expect(() => retryDelayMs(1.5, 'ms')).toThrow(RangeError);
  });
});

/** Plays an answer sequence through the policy; returns the attempts made and how it stopped. */
function play(answers: (n: number) => AttemptResult): { attempts: number; delays: number[]; reason: string } {
  const history: AttemptResult[] = [];
  const delays: number[] = [];
  for (;;) {
    history.push(answers(history.length + 1));
    const decision = decideRetry(history, 'ms');
    if (!decision.retry) return { attempts: history.length, delays, reason: decision.reason };
    expect(decision.n).toBe(history.length);
    delays.push(decision.delayMs);
  }
}

describe('decideRetry', () => {
  it('stops on success', () => {
    expect(decideRetry([Code.Success], 'ms')).toEqual({ retry: false, reason: 'succeeded' });
    expect(play((n) => (n < 4 ? Code.InternalServiceError : Code.Success))).toEqual({
      attempts: 4,
      delays: [301, 477, 602],
      reason: 'succeeded',
    });
  });

  it.each([Code.UnknownError, Code.InternalServiceError, Code.InternalServiceError13, Code.SiteDisabled, Code.ReadonlyTemp, Code.ClientError, Code.UserOffline, Code.ConcurrentRequest])(
    'retries code %i at most 10 times (11 attempts)',
    (code) => {
      const result = play(() => code);
      expect(result.attempts).toBe(11);
      expect(result.reason).toBe('retries-exhausted');
      expect(result.delays).toEqual([301, 477, 602, 699, 778, 845, 903, 954, 1000, 1041]);
    },
  );

  it('retries an unknown outcome like a listed code', () => {
    expect(play(() => 'unknown')).toMatchObject({ attempts: 11, reason: 'retries-exhausted' });
  });

  it.each([Code.TransactionNotFound, Code.BetTransactionNotFoundInRound])('retries code %i at most 3 times (4 attempts)', (code) => {
    expect(play(() => code)).toEqual({ attempts: 4, delays: [301, 477, 602], reason: 'limited-retries-exhausted' });
  });

  it('counts 34/39 retries apart from the overall budget', () => {
    // 34, 12 ×6, 39, 39 then 34: the fourth 34/39 answer stops it after 10 attempts.
    const seq: AttemptResult[] = [34, 12, 12, 12, 12, 12, 12, 39, 39, 34];
    expect(play((n) => seq[n - 1] ?? Code.Success)).toMatchObject({ attempts: 10, reason: 'limited-retries-exhausted' });
  });

  it('keeps the overall cap when 34/39 answers are mixed with other codes', () => {
    const seq: AttemptResult[] = [34, 12, 34, 12, 34, 12, 12, 12, 12, 12, 12, 12];
    expect(play((n) => seq[n - 1] ?? Code.Success)).toMatchObject({ attempts: 11, reason: 'retries-exhausted' });
  });

  it('stops at once on a code outside the retry list', () => {
    expect(decideRetry([Code.InsufficientFunds], 'ms')).toEqual({ retry: false, reason: 'final-code' });
    expect(decideRetry([999], 'ms')).toEqual({ retry: false, reason: 'final-code' });
    expect(decideRetry([12, 12, Code.RoundClosed], 'ms')).toEqual({ retry: false, reason: 'final-code' });
  });

  it('needs at least one attempt', () => {
    expect(() => decideRetry([], 'ms')).toThrow(RangeError);
  });
});

describe('retryPlan (the plain part of decideRetry, as data for the store)', () => {
  it.each(['ms', 's'] as const)('retries what it lists after the delay it lists, and lists nothing decideRetry would not retry (%s)', (unit) => {
    const plan = retryPlan(unit);
    const codes = WALLET_CODES.map((c) => c.code);
    for (const last of [...codes, 'unknown' as const]) {
      const listed = last === 'unknown' || plan.plainRetryCodes.includes(last);
      for (let entries = 1; entries <= MAX_RETRIES + 1; entries += 1) {
        const history = [...Array<AttemptResult>(entries - 1).fill(2), last];
        const decision = decideRetry(history, unit);
        if (listed && entries <= plan.delaysMs.length) expect(decision).toEqual({ retry: true, n: entries, delayMs: plan.delaysMs[entries - 1] });
        // Not listed: a limited code may still retry, but through decideRetry only.
        if (!listed && decision.retry) expect(retryClass(last as number)).toBe('limited');
      }
    }
    expect(plan.delaysMs).toHaveLength(MAX_RETRIES);
  });
});
