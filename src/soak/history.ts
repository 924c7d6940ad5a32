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
  /** Every send of this exact body, resends and deliberate duplicates included, in order. */
  readonly replies: Reply[];
}

export interface PlayerStart {
  readonly playerId: string;
  readonly currency: string;
  /** Fraction digits of the currency. */
  readonly scale: number;
  /** The balance the first launch reported (decimal text). */
  readonly startBalance: string;
}

/** The `end` of a player's last session: once accepted (200, or 202 while work is pending), its token must be terminated. */
export interface SessionEnd {
  readonly playerId: string;
  /** The wallet token the session was launched with. */
  readonly token: string;
  readonly reply: Reply;
}

export interface EngineHistory {
  readonly players: readonly PlayerStart[];
  readonly transactions: readonly EngineTransaction[];
  readonly ends: readonly SessionEnd[];
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
