/**
 * The wallet's result codes as data: the one place in the code base where a code number is written.
 * Everything else asks this table (by name or by number) what a code means and what a caller owes.
 *
 * `retry`      — the credit/rollback retry duty: `none` (final), `retry` (counts toward the overall
 *                cap of 10), `limited` (also counts toward the cap of 3 for codes 34/39).
 * `compensate` — the debit rollback duty: a debit answered with this code must be rolled back.
 * `outage`     — evidence that the wallet as a whole is down, not one transaction: counted by the
 *                wallet circuit breaker across different transactions (src/duties/breaker-policy.ts).
 * `spec`       — listed in the wallet spec; `false` marks codes the spec leaves open and the bundled
 *                simulator chose (see docs/simulator.md). The gateway treats those like any code
 *                outside the spec's table: final, HTTP 422 to the engine.
 */
export type RetryClass = 'none' | 'retry' | 'limited';

export interface WalletCodeInfo {
  readonly code: number;
  readonly name: string;
  readonly httpStatus: number;
  readonly retry: RetryClass;
  readonly compensate: boolean;
  readonly outage: boolean;
  readonly spec: boolean;
  readonly meaning: string;
}

const table = [
  { code: 1, name: 'Success', httpStatus: 200, retry: 'none', compensate: false, outage: false, spec: true, meaning: 'Request succeeded.' },
  { code: 2, name: 'UnknownError', httpStatus: 500, retry: 'retry', compensate: true, outage: true, spec: true, meaning: 'An unknown error has occurred.' },
  { code: 12, name: 'InternalServiceError', httpStatus: 500, retry: 'retry', compensate: true, outage: true, spec: true, meaning: 'A server-side service error occurred.' },
  { code: 13, name: 'InternalServiceError', httpStatus: 500, retry: 'retry', compensate: true, outage: true, spec: true, meaning: 'A server-side service error occurred.' },
  { code: 25, name: 'SiteDisabledError', httpStatus: 403, retry: 'retry', compensate: false, outage: false, spec: true, meaning: 'The requested site is disabled.' },
  { code: 29, name: 'ReadonlyTempError', httpStatus: 500, retry: 'retry', compensate: false, outage: true, spec: true, meaning: 'A temporary read-only error occurred.' },
  { code: 30, name: 'ClientError', httpStatus: 403, retry: 'retry', compensate: true, outage: false, spec: true, meaning: 'A client error occurred.' },
  { code: 32, name: 'UserOfflineError', httpStatus: 403, retry: 'retry', compensate: false, outage: false, spec: true, meaning: 'The user is currently offline.' },
  { code: 34, name: 'TransactionNotFoundError', httpStatus: 422, retry: 'limited', compensate: false, outage: false, spec: true, meaning: 'The specified transaction was not found.' },
  { code: 39, name: 'BetTransactionNotFoundInRoundError', httpStatus: 422, retry: 'limited', compensate: false, outage: false, spec: true, meaning: 'The bet transaction was not found in the specified round.' },
  { code: 42, name: 'ConcurrentRequestError', httpStatus: 403, retry: 'retry', compensate: false, outage: true, spec: true, meaning: 'Multiple concurrent requests detected.' },
  // Codes the spec leaves open ("other codes ... not shown"); chosen for the bundled simulator.
  { code: 101, name: 'InvalidCredentialsError', httpStatus: 401, retry: 'none', compensate: false, outage: false, spec: false, meaning: 'Basic credentials missing or wrong.' },
  { code: 102, name: 'InvalidSignatureError', httpStatus: 401, retry: 'none', compensate: false, outage: false, spec: false, meaning: 'X-Request-Signature missing or wrong.' },
  { code: 103, name: 'ValidationError', httpStatus: 400, retry: 'none', compensate: false, outage: false, spec: false, meaning: 'The request body is malformed.' },
  { code: 104, name: 'InvalidTokenError', httpStatus: 401, retry: 'none', compensate: false, outage: false, spec: false, meaning: 'Token unknown, not yet authenticated, or issued for another player, site or currency.' },
  { code: 105, name: 'TokenDeactivatedError', httpStatus: 401, retry: 'none', compensate: false, outage: false, spec: false, meaning: 'The token was terminated.' },
  { code: 106, name: 'InsufficientFundsError', httpStatus: 402, retry: 'none', compensate: false, outage: false, spec: false, meaning: 'The balance does not cover the debit.' },
  { code: 107, name: 'RoundClosedError', httpStatus: 409, retry: 'none', compensate: false, outage: false, spec: false, meaning: 'The round was closed by an earlier call.' },
  { code: 108, name: 'RoundHasDebitError', httpStatus: 409, retry: 'none', compensate: false, outage: false, spec: false, meaning: 'The round already has a debit.' },
  { code: 109, name: 'TransactionConflictError', httpStatus: 409, retry: 'none', compensate: false, outage: false, spec: false, meaning: 'A known transaction_id was sent with different fields.' },
  { code: 110, name: 'AmountMismatchError', httpStatus: 422, retry: 'none', compensate: false, outage: false, spec: false, meaning: 'A rollback amount differs from its debit.' },
] as const satisfies readonly WalletCodeInfo[];

export type WalletCodeName = (typeof table)[number]['name'];

const byCode: ReadonlyMap<number, WalletCodeInfo> = new Map(table.map((row) => [row.code, row]));

export const WALLET_CODES: readonly WalletCodeInfo[] = table;

/** Named codes, for code that must produce or recognise one particular answer. */
export const Code = {
  Success: 1,
  UnknownError: 2,
  InternalServiceError: 12,
  InternalServiceError13: 13,
  SiteDisabled: 25,
  ReadonlyTemp: 29,
  ClientError: 30,
  UserOffline: 32,
  TransactionNotFound: 34,
  BetTransactionNotFoundInRound: 39,
  ConcurrentRequest: 42,
  InvalidCredentials: 101,
  InvalidSignature: 102,
  Validation: 103,
  InvalidToken: 104,
  TokenDeactivated: 105,
  InsufficientFunds: 106,
  RoundClosed: 107,
  RoundHasDebit: 108,
  TransactionConflict: 109,
  AmountMismatch: 110,
} as const satisfies Record<string, (typeof table)[number]['code']>;

export function codeInfo(code: number): WalletCodeInfo | undefined {
  return byCode.get(code);
}

/** Retry class for the credit/rollback duty; codes outside the spec's table are final. */
export function retryClass(code: number): RetryClass {
  const info = byCode.get(code);
  return info?.spec ? info.retry : 'none';
}

/** Whether a debit answered with this code must be rolled back. */
export function mustCompensateDebit(code: number): boolean {
  return byCode.get(code)?.compensate === true;
}

/** HTTP status the gateway answers for a wallet refusal: the spec's status, 422 outside its table. */
export function httpStatusForRefusal(code: number): number {
  const info = byCode.get(code);
  return info?.spec ? info.httpStatus : 422;
}

/** HTTP status the wallet (and the simulator) sends with a code. */
export function walletHttpStatus(code: number): number {
  return byCode.get(code)?.httpStatus ?? 500;
}

export function codeName(code: number): string {
  return byCode.get(code)?.name ?? `Code${code}`;
}

/** Whether a code says the wallet as a whole is in trouble (2, 12, 13, 29, 42). */
export function signalsOutage(code: number): boolean {
  return byCode.get(code)?.outage ?? false;
}

export function isSuccess(code: number): boolean {
  return code === Code.Success;
}
