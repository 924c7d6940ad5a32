import { Code, WALLET_CODES, codeInfo, httpStatusForRefusal, mustCompensateDebit, retryClass, walletHttpStatus } from '../../src/wallet/codes';

describe('wallet code table', () => {
  it('holds the spec table with its HTTP statuses', () => {
    const spec = WALLET_CODES.filter((c) => c.spec).map((c) => [c.code, c.name, c.httpStatus]);
    expect(spec).toEqual([
      [1, 'Success', 200],
      [2, 'UnknownError', 500],
      [12, 'InternalServiceError', 500],
      [13, 'InternalServiceError', 500],
      [25, 'SiteDisabledError', 403],
      [29, 'ReadonlyTempError', 500],
      [30, 'ClientError', 403],
      [32, 'UserOfflineError', 403],
      [34, 'TransactionNotFoundError', 422],
      [39, 'BetTransactionNotFoundInRoundError', 422],
      [42, 'ConcurrentRequestError', 403],
    ]);
  });

  it('classes the credit/rollback retry duty', () => {
    const retried = WALLET_CODES.filter((c) => retryClass(c.code) !== 'none').map((c) => c.code);
    expect(retried).toEqual([2, 12, 13, 25, 29, 30, 32, 34, 39, 42]);
    expect(WALLET_CODES.filter((c) => retryClass(c.code) === 'limited').map((c) => c.code)).toEqual([34, 39]);
  });

  it('classes the debit rollback duty', () => {
    expect(WALLET_CODES.filter((c) => mustCompensateDebit(c.code)).map((c) => c.code)).toEqual([2, 12, 13, 30]);
  });

  it('treats codes outside the spec table as final and 422 to the engine', () => {
    expect(retryClass(Code.InsufficientFunds)).toBe('none');
    expect(httpStatusForRefusal(Code.InsufficientFunds)).toBe(422);
    expect(httpStatusForRefusal(777)).toBe(422);
    expect(httpStatusForRefusal(Code.SiteDisabled)).toBe(403);
    expect(walletHttpStatus(Code.InsufficientFunds)).toBe(402);
  });

  it('has unique codes and names every Code entry', () => {
    const codes = WALLET_CODES.map((c) => c.code);
    expect(new Set(codes).size).toBe(codes.length);
    for (const code of Object.values(Code)) expect(codeInfo(code)).toBeDefined();
  });
});
