import type { CodedError } from '../lib/error-codes';
import type { Operation, TransactionAction } from '../wallet/protocol';

/**
 * The gateway's records in Redis, as the engine use cases and the workers see them.
 * Redis is the one store; the key layout is in src/store/keys.ts, the atomic steps in src/store/lua/.
 */

export interface Session {
  readonly sessionId: string;
  /** The wallet token: goes to the wallet only, never to a game client, an engine answer or a log. */
  readonly token: string;
  /** A digest of the token naming its pending set (see tokenRefOf); the token itself stays in the session. */
  readonly tokenRef: string;
  readonly playerId: string;
  readonly siteId: string;
  readonly currency: string;
  readonly gameId: string;
  /** Last balance the wallet reported, as decimal text. */
  readonly balance: string;
  /** `open` → `ending` (end asked, credits/rollbacks still pending) → `ended` (terminate sent). */
  readonly state: 'open' | 'ending' | 'ended';
  readonly createdAt: number;
}

/** What a session never changes after its launch. */
export type SessionProfile = Omit<Session, 'balance' | 'state'>;

export type TransactionKind = TransactionAction;

export type TransactionState = 'pending' | 'succeeded' | 'failed' | 'compensating' | 'compensated' | 'dead';

/** The note of an engine refund settled with nothing to reverse: its bet never took money. */
export const NOTHING_REVERSED_NOTE = 'nothing reversed: the wallet refused its bet for good (never applied)';

/** The note of an engine refund standing in for its bet's compensation, whose bet `status` found never applied. */
export const BET_NEVER_APPLIED_NOTE = 'nothing reversed: the wallet reports its bet never applied (status); the bet is watched';

export const FINAL_STATES: ReadonlySet<TransactionState> = new Set(['succeeded', 'failed', 'compensated', 'dead']);

/** Why a record is `failed` or `dead`, or how it was settled; shown to operators. */
export type TransactionError = CodedError;

export interface TransactionRecord {
  readonly transactionId: string;
  readonly kind: TransactionKind;
  readonly state: TransactionState;
  readonly sessionId: string;
  /** The session's tokenRef: the record sits in that token's pending set until it is final. */
  readonly tokenRef: string;
  readonly playerId: string;
  readonly siteId: string;
  /** The engine's round id. */
  readonly roundId: string;
  /** The round id sent to the wallet (differs from roundId for multi_bet games). */
  readonly walletRoundId: string;
  readonly amount: string;
  readonly currency: string;
  readonly roundClosed: boolean;
  /** win/refund: the engine's bet_transaction_id; compensation: the debit being rolled back. */
  readonly referenceTransactionId: string | null;
  /** Hash of the engine's request, for idempotency (same id + same body → stored answer). */
  readonly bodyHash: string;
  readonly walletOperation: Operation;
  /**
   * The exact wallet request body; every retry sends these bytes again. Kept while the record may
   * still be sent or asked about (pending, compensating, dead); '' once it is succeeded, failed or
   * compensated (dropped to keep retained records small).
   */
  readonly walletBody: string;
  /** Wallet tries so far, the first included. */
  readonly attempts: number;
  readonly lastWalletCode: number | null;
  /** Every attempt's result in order: a code, or 'unknown'. Feeds the pure retry policy. */
  readonly history: readonly (number | 'unknown')[];
  /** Last balance the wallet reported for this player (decimal text), or null. */
  readonly balance: string | null;
  /** Debit only: the compensation rollback's transaction id, once one was scheduled. */
  readonly compensationId: string | null;
  /** Set when a compensation rollback is an automatic one (not an engine refund). */
  readonly isCompensation: boolean;
  /**
   * A round-closing credit/rollback that arrived while earlier credits/rollbacks of its round were
   * still pending: it is held (no inline call) until they settled, or it would strand them.
   */
  readonly deferred: boolean;
  /**
   * A credit/rollback taken without an inline attempt because the wallet circuit breaker was not
   * closed (acknowledged 202) or its claim was not durable (503 NOT_DURABLE): queued for the
   * background, never sent by the gateway.
   */
  readonly queued: boolean;
  /**
   * A bet refused before it was sent because its claim was not durable (503 NOT_DURABLE, "safe to
   * repeat"): a repeat with the same body is claimed afresh, not answered from this record.
   */
  readonly reclaimable: boolean;
  /**
   * A worker run is sending an attempt until then (set with the attempt's placeholder, cleared by
   * its settle): another run of the same job — a stalled job picked up again — must not send
   * meanwhile. Past it, a placeholder left behind means its run died.
   */
  readonly inFlightUntil: number | null;
  /**
   * A `compensated` debit whose compensation found it never applied: wallet `status` is asked again
   * until then, and a debit that shows up applied is rolled back after all (contract 5.4).
   */
  readonly recheckUntil: number | null;
  readonly error: TransactionError | null;
  /** How an operator resolved the record when it was dead (no wallet call); null otherwise. */
  readonly resolution: Resolution | null;
  /** Why the record ended `dead`, or a note on how it was settled (e.g. 'status: not applied'). */
  readonly note: string | null;
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** What a claim (or a compensation's start) records; the rest starts at its defaults. */
export type NewTransaction = Omit<
  TransactionRecord,
  | 'state'
  | 'attempts'
  | 'lastWalletCode'
  | 'history'
  | 'balance'
  | 'compensationId'
  | 'error'
  | 'note'
  | 'updatedAt'
  | 'deferred'
  | 'queued'
  | 'reclaimable'
  | 'inFlightUntil'
  | 'recheckUntil'
  | 'resolution'
>;

/**
 * An operator's resolution of a dead record, after checking the wallet (contract 5.4):
 * - `applied`: the wallet holds it (`succeeded`; a rollback's debit is `compensated`);
 * - `not_applied`: it is not at the wallet (`failed`); a rollback that stood for a debit only did
 *   not happen, so its debit is compensated anew (a debit never ends `failed` while the wallet
 *   may hold it);
 * - `bet_not_applied`: said of a debit (through its rollback): the bet itself never reached the
 *   wallet, so nothing is owed; the debit is `failed`, and so is its compensation, while an engine
 *   refund standing in for it ends `succeeded`, nothing reversed (it was acknowledged, contract 5.3).
 */
export type Resolution = 'applied' | 'not_applied' | 'bet_not_applied';

/** One wallet attempt as the attempt log keeps it. */
export interface AttemptLogEntry {
  /** When the attempt's answer (or its absence) was recorded, ms since the epoch. */
  readonly at: number;
  /** The wallet's code, or 'unknown' (timeout, reset, unparseable). */
  readonly result: number | 'unknown';
  readonly latencyMs: number;
  /** The wallet's request_id, when its answer carried one. */
  readonly walletRequestId: string | null;
}

/** The public shape of a record (contract section 4, "Transaction record"). */
export interface TransactionView {
  transaction_id: string;
  kind: TransactionKind;
  state: TransactionState;
  session_id: string;
  round_id: string;
  amount: string;
  attempts: number;
  last_wallet_code: number | null;
  balance: string | null;
  compensation: null | { transaction_id: string; state: TransactionState };
}
