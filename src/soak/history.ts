import type { ErrorCode } from '../lib/error-codes';

/**
 * What the scripted engine sent and what it was told: the engine's side of the books, which the
 * checker (./checker.ts) holds against the wallet's ledger. Plain data, so the checker can be
 * tested on synthetic histories.
 */
export type EngineKind = 'debit' | 'credit' | 'rollback';

/** What one send of a body came to. */
export type Reply =
  | {
      readonly kind: 'answer';
      readonly status: number;
      /** `succeeded`, `pending` or `failed` from the body; undefined when the body had none. */
      readonly state: string | undefined;
      /** `error.code` of a failed answer. */
      readonly code: string | undefined;
      readonly walletCode: number | null;
    }
  /** Connection refused or reset, or no answer within the engine's deadline: outcome unknown to the engine. */
  | { readonly kind: 'no-answer'; readonly reason: string };

export interface EngineTransaction {
  readonly transactionId: string;
  readonly kind: EngineKind;
  readonly playerId: string;
  readonly sessionId: string;
  readonly roundId: string;
  /** Decimal text. */
  readonly amount: string;
  /** win/refund: the bet it settles. */
  readonly betTransactionId: string | null;
  readonly roundClosed: boolean;
  /** A bet sent after `end` was answered: it must be refused. */
  readonly afterEnd: boolean;
  /**
   * The engine had sent `end` of this session before or at the same moment as this transaction,
   * so `409 SESSION_ENDED` is a fair answer. Without it, no end of the session can explain a
   * refusal for an ended session or a deactivated token: only another session's end could.
   */
  readonly endSent: boolean;
  /** A refund naming a bet that is not the round's (another round's, or one never sent): it must get 422 BET_NOT_FOUND before any wallet call. */
  readonly foreignBet: boolean;
  /** Every send of this exact body, resends and deliberate duplicates included, in order. */
  readonly replies: Reply[];
}

export interface PlayerStart {
  readonly playerId: string;
  /** The wallet token every session of this player was launched with. */
  readonly token: string;
  readonly currency: string;
  /** Fraction digits of the currency. */
  readonly scale: number;
  /** The balance the first launch reported (decimal text). */
  readonly startBalance: string;
}

/** A session the engine opened (a launch, or a relaunch with the same token). */
export interface LaunchedSession {
  readonly playerId: string;
  readonly token: string;
  readonly sessionId: string;
}

/** The `end` of one session. Once every session on a token was ended (200, or 202 while work is pending), the token must be terminated. */
export interface SessionEnd {
  readonly playerId: string;
  /** The wallet token the session was launched with. */
  readonly token: string;
  readonly sessionId: string;
  readonly reply: Reply;
}

/**
 * The interleavings of `end` the engine plays on purpose (contract 5.6), and refunds of a bet
 * that is not the round's (contract 4, 5.4):
 * - `end-while-win-pending`: `end` sent while a win of the session was answered 202 and still retried;
 * - `end-while-win-in-flight`: `end` and a win of the session sent at the same moment;
 * - `end-older-session`: after a relaunch, the older session ended while the newer one plays on;
 * - `foreign-refund`: a refund naming another round's bet or a bet never sent;
 * - `win-before-bet-answer`: a win sent while its bet is still at the wallet (contract 5.2);
 * - `refund-win-pair`: a win and a refund of one bet in an open round, either first (contract 5.2);
 * - `relaunch-repeat`: a call repeated byte for byte through a relaunched session (contract 5.1);
 * - `operator-resolution`: the run's operator resolves a dead compensation after checking the wallet (contract 5.4);
 * - `currency-relaunch`: the player launched on a token in another currency refunds and wins the bet through it (contract 5.2);
 * - `worker-paused-past-lock`: a job taken over from a worker paused past its lock, whose stalled run then went on (contract 5.3).
 */
export type InterleavingKind =
  | 'end-while-win-pending'
  | 'end-while-win-in-flight'
  | 'end-older-session'
  | 'foreign-refund'
  | 'win-before-bet-answer'
  | 'refund-win-pair'
  | 'relaunch-repeat'
  | 'operator-resolution'
  | 'currency-relaunch'
  | 'worker-paused-past-lock';

export interface Interleaving {
  readonly kind: InterleavingKind;
  readonly playerId: string;
  readonly sessionId: string;
  /** The win or refund involved; null when no single one is (an older session ended, a win of the last round answered 202). */
  readonly transactionId: string | null;
  /** What the engine was told, e.g. `win 202, end 202`. */
  readonly outcome: string;
}

/**
 * Launch sends on one token that got no answer or a 5xx: each may have opened a session the engine
 * never learned of, which holds the token until it expires (contract 5.6: an expired session counts
 * as ended).
 */
export interface UnansweredLaunches {
  readonly token: string;
  readonly sends: number;
}

export interface EngineHistory {
  readonly players: readonly PlayerStart[];
  readonly sessions: readonly LaunchedSession[];
  readonly unansweredLaunches: readonly UnansweredLaunches[];
  readonly transactions: readonly EngineTransaction[];
  readonly ends: readonly SessionEnd[];
  readonly interleavings: readonly Interleaving[];
}

/** Gateway codes that speak about the wallet: a 5xx carrying one is the gateway's answer, not a crash. */
const WALLET_ANSWER_CODES: ReadonlySet<string> = new Set<ErrorCode>(['WALLET_UNAVAILABLE', 'WALLET_REJECTED']);

/**
 * Whether the engine must send the same body again: nothing came back, the gateway failed on its
 * own (a 5xx that is not about the wallet: Redis down, a process dying), or a duplicate arrived
 * while the first was still at the wallet.
 */
export function needsResend(reply: Reply): boolean {
  if (reply.kind === 'no-answer') return true;
  if (reply.status === 409 && reply.code === ('IN_PROGRESS' satisfies ErrorCode)) return true;
  return reply.status >= 500 && !WALLET_ANSWER_CODES.has(reply.code ?? '');
}

export function isAccepted(reply: Reply): boolean {
  return reply.kind === 'answer' && (reply.status === 200 || reply.status === 202) && (reply.state === 'succeeded' || reply.state === 'pending');
}

/** A reply in a few characters, for interleaving outcomes and finding details: `202`, `409 SESSION_ENDED/105`, `no answer (ECONNRESET)`. */
export function shortReply(r: Reply): string {
  if (r.kind === 'no-answer') return `no answer (${r.reason})`;
  return `${r.status}${r.code === undefined ? '' : ` ${r.code}`}${r.walletCode === null ? '' : `/${r.walletCode}`}`;
}
