/**
 * The gateway's error codes, in one table: code → HTTP status → default message (as fastify's
 * lib/errors.js keeps them). The contract's section 4 names most of them; the rest are the
 * gateway's own (docs/engine-api.md lists every one). Every refusal the gateway answers or stores
 * is made here, so a code is written once and its status cannot drift between the places that
 * use it. Lives in lib/ because every layer (store, duties, engine, http, workers) names codes.
 */
export const ERROR_CODES = {
  VALIDATION_FAILED: { status: 400, message: 'invalid input' },
  UNAUTHORIZED: { status: 401, message: 'missing or wrong credentials' },
  CROSS_ORIGIN_REFUSED: { status: 403, message: 'a change from another origin is refused' },
  NOT_FOUND: { status: 404, message: 'no such route' },
  SESSION_NOT_FOUND: { status: 404, message: 'unknown session' },
  TRANSACTION_NOT_FOUND: { status: 404, message: 'unknown transaction' },
  WALLET_NOT_FOUND: { status: 404, message: 'unknown wallet' },
  REQUEST_TIMEOUT: { status: 408, message: 'the body did not arrive in time' },
  SESSION_ENDED: { status: 409, message: 'the session was ended' },
  ROUND_CLOSED: { status: 409, message: 'the round was closed by an earlier call' },
  ROUND_HAS_BET: { status: 409, message: 'the round already has a bet' },
  IDEMPOTENCY_CONFLICT: { status: 409, message: 'this transaction_id was already used with a different body' },
  IN_PROGRESS: { status: 409, message: 'the first request with this transaction_id is still at the wallet; repeat it shortly' },
  BET_ALREADY_REFUNDED: { status: 409, message: 'the bet of this round was already refunded (or is being rolled back)' },
  AMBIGUOUS_TRANSACTION: { status: 409, message: 'this transaction_id is held in several of your wallets; repeat with ?wallet=<id>' },
  BET_NOT_OPEN: { status: 409, message: 'the bet was refused, refunded or rolled back, or (for a refund) already has a win' },
  NOT_DEAD: { status: 409, message: 'only a dead transaction can be redriven' },
  NOTHING_TO_RELOAD: { status: 409, message: 'no WALLETS_FILE: the single-wallet variables are read at start only' },
  WALLET_IN_USE: { status: 409, message: 'a wallet with open sessions or unfinished or dead work cannot be removed' },
  PAYLOAD_TOO_LARGE: { status: 413, message: 'the body is too large' },
  REGISTRY_INVALID: { status: 422, message: 'WALLETS_FILE does not parse or validate; nothing was changed' },
  BET_NOT_FOUND: { status: 422, message: 'no bet with this bet_transaction_id was recorded for this player and round' },
  CURRENCY_MISMATCH: { status: 422, message: "not in the bet's currency" },
  // The status of a wallet refusal is the spec's for its wallet code; 422 is the fallback.
  WALLET_REJECTED: { status: 422, message: 'the wallet refused this transaction' },
  TOO_MANY_ATTEMPTS: { status: 429, message: 'too many failed attempts; try again later' },
  TOO_MANY_LAUNCHES: { status: 429, message: 'too many launches with this token' },
  INTERNAL_ERROR: { status: 500, message: 'internal error; the request may be repeated with the same body' },
  DEMO_FAULT_FAILED: { status: 502, message: 'the simulator fault API did not work' },
  RELOAD_INCOMPLETE: { status: 503, message: 'not every process applied the reload; repeat it once they answer' },
  WALLET_UNAVAILABLE: { status: 503, message: 'wallet outcome unknown' },
  NOT_DURABLE: { status: 503, message: 'Redis replicas did not acknowledge the outcome in time; safe to repeat with the same body' },
  LEDGER_UNAVAILABLE: { status: 503, message: 'the ledger (PostgreSQL) did not answer; repeat shortly' },
} as const satisfies Record<string, { readonly status: number; readonly message: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** A refusal as answered and stored: the contract's `error` object plus its HTTP status. */
export interface CodedError {
  readonly code: ErrorCode;
  /** The wallet's result code when the wallet refused, else null. */
  readonly walletCode: number | null;
  readonly message: string;
  readonly httpStatus: number;
}

/** The error of `code` with the table's status and message unless given. */
export function codedError(code: ErrorCode, options: { message?: string; walletCode?: number | null; httpStatus?: number } = {}): CodedError {
  const entry = ERROR_CODES[code];
  return {
    code,
    walletCode: options.walletCode ?? null,
    message: options.message ?? entry.message,
    httpStatus: options.httpStatus ?? entry.status,
  };
}
