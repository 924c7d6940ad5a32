import type { GatewayConfig } from '../config/env';
import type { WalletRules } from '../config/registry';
import { codedError } from '../lib/error-codes';
import type { Duties } from '../duties/types';
import type { InFlightCap } from '../duties/in-flight-cap';
import type { WalletBreaker } from '../duties/wallet-breaker';
import type { Logger } from '../observability/logger';
import type { Durability } from '../store/durability';
import type { SessionStore } from '../store/sessions';
import type { TransactionStore } from '../store/transactions';
import type { TransactionError, TransactionView } from '../store/types';
import type { WalletClient } from '../wallet/protocol';

/** The part of the configuration the use cases read: the deployment's, and the rules of the one wallet they serve. */
export type EngineConfig = WalletRules & Pick<
  GatewayConfig,
  | 'GAME_URL_TEMPLATE'
  | 'DEFAULT_CURRENCY_DIGITS'
  | 'MULTI_BET_GAMES'
  | 'REDIS_MIN_REPLICAS'
  | 'REDIS_WAIT_MS'
  | 'RECORD_RETENTION_SECONDS'
  | 'TOKEN_SESSION_CAP'
  | 'TOKEN_LAUNCHES_PER_MINUTE'
>;

/** Everything a use case needs, passed in (no globals, no HTTP). */
export interface EngineDeps {
  readonly wallet: WalletClient;
  readonly sessions: SessionStore;
  readonly transactions: TransactionStore;
  readonly duties: Duties;
  /** Answers wait until what they promise is durable to the configured level (contract 9). */
  readonly durability: Durability;
  readonly config: EngineConfig;
  readonly clock: () => number;
  readonly logger: Logger;
  /** The wallet circuit breaker: while it is not closed no call is made inline (docs/background.md). */
  readonly breaker: Pick<WalletBreaker, 'allowsCalls' | 'refused'>;
  /** This process's share of the wallet's max_in_flight: a send over it is not made inline. */
  readonly cap: Pick<InFlightCap, 'tryTake' | 'give'>;
  /**
   * The record as the ledger holds it (contract 12), for a lookup of an id Redis no longer holds;
   * undefined: no ledger. Throws when the ledger does not answer.
   */
  readonly ledgerLookup?: (transactionId: string) => Promise<TransactionView | undefined>;
}

export interface FieldIssue {
  readonly field: string;
  readonly message: string;
}

/** A refusal as the contract's section 4 names it; `fields` only for VALIDATION_FAILED. */
export interface EngineError extends TransactionError {
  readonly fields?: readonly FieldIssue[];
}

/**
 * What a game-engine call came to. `transactionId` is null for session calls (balance, end);
 * `balance` is decimal text.
 */
export type Answer =
  | { readonly state: 'succeeded' | 'pending'; readonly transactionId: string | null; readonly balance: string; readonly currency: string }
  | { readonly state: 'failed'; readonly error: EngineError };

export type LaunchResult =
  | { readonly kind: 'launched'; readonly sessionId: string; readonly balance: string; readonly currency: string; readonly gameUrl: string }
  /** `retryAfterMs`: when a launch refused for its rate may be tried again. */
  | { readonly kind: 'failed'; readonly error: EngineError; readonly retryAfterMs?: number };

export type LookupResult = { readonly kind: 'found'; readonly view: TransactionView } | { readonly kind: 'failed'; readonly error: EngineError };

/** What the wallet said to a `status` call, without its body or the token. */
export interface WalletStatusView {
  readonly outcome: 'ok' | 'rejected' | 'unknown';
  readonly walletCode: number | null;
  readonly message: string;
  /** The balance the wallet reported (decimal text), on success only. */
  readonly balance: string | null;
}

export type VerifyResult =
  | { readonly kind: 'verified'; readonly view: TransactionView; readonly wallet: WalletStatusView }
  | { readonly kind: 'failed'; readonly error: EngineError };

export const errors = {
  validation: (fields: readonly FieldIssue[]): EngineError => ({
    ...codedError('VALIDATION_FAILED', { message: `invalid ${fields.map((f) => f.field).join(', ')}` }),
    fields,
  }),
  sessionNotFound: (): EngineError => codedError('SESSION_NOT_FOUND'),
  sessionEnded: (): EngineError => codedError('SESSION_ENDED'),
  transactionNotFound: (): EngineError => codedError('TRANSACTION_NOT_FOUND'),
  conflict: (): EngineError => codedError('IDEMPOTENCY_CONFLICT'),
  inProgress: (): EngineError => codedError('IN_PROGRESS'),
  roundClosed: (): EngineError => codedError('ROUND_CLOSED'),
  roundHasBet: (): EngineError => codedError('ROUND_HAS_BET'),
  betNotFound: (): EngineError => codedError('BET_NOT_FOUND'),
  betAlreadyRefunded: (): EngineError => codedError('BET_ALREADY_REFUNDED'),
  betNotOpen: (): EngineError => codedError('BET_NOT_OPEN'),
  betInProgress: (): EngineError => codedError('IN_PROGRESS', { message: 'the bet is still at the wallet or in doubt; repeat the win shortly' }),
  currencyMismatch: (): EngineError => codedError('CURRENCY_MISMATCH'),
  /** Refused without a wallet call: the wallet circuit breaker is open (nothing was taken). */
  walletDown: (): EngineError => codedError('WALLET_UNAVAILABLE', { message: 'the wallet is unavailable (circuit breaker open); nothing was sent, repeat later' }),
  /** Refused without a wallet call: the wallet's max_in_flight calls are open (nothing was taken). */
  walletBusy: (): EngineError => codedError('WALLET_UNAVAILABLE', { message: 'the wallet has its most calls in flight (max_in_flight); nothing was sent, repeat later' }),
  notDurable: (): EngineError => codedError('NOT_DURABLE'),
  tooManyLaunches: (message: string): EngineError => codedError('TOO_MANY_LAUNCHES', { message }),
} as const;

/**
 * Who a use case runs for: the gateway request id goes into the wallet-call log line. Passed
 * along explicitly (an AsyncLocalStorage cost ~2% of the gateway's CPU per request).
 */
export interface RequestContext {
  readonly requestId?: string;
}

export const NO_CONTEXT: RequestContext = Object.freeze({});

export const failed = (error: EngineError): Extract<Answer, { state: 'failed' }> => ({ state: 'failed', error });
