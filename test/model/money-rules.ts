import { fromMinor, toMinor } from '../../src/lib/money';

/**
 * The pure part of the money model: what the engine sent and was told, and the contract's
 * invariants over that, the wallet's books and the gateway's records (contract 5.1-5.6). No I/O:
 * every check takes plain views and returns the violations it found, each a sentence.
 */
export type Kind = 'debit' | 'credit' | 'rollback';

/** What one engine call was answered: 200 succeeded, 202 pending, or a refusal by its code. */
export type Told = { readonly state: 'succeeded' | 'pending' } | { readonly state: 'failed'; readonly code: string } | { readonly state: 'unanswered' };

export interface SentMoney {
  readonly id: string;
  readonly kind: Kind;
  readonly player: string;
  readonly token: string;
  readonly amount: string;
  /** win/refund: the bet's id. */
  readonly bet: string | null;
  /** A bet sent with round_closed true. */
  readonly closesRound?: boolean;
  /** Every answer to a call with this id, in order. */
  readonly told: Told[];
}

export interface WalletTx {
  readonly op: Kind;
  readonly rolledBackBy: string | undefined;
}

export interface RecordView {
  readonly id: string;
  readonly kind: Kind;
  readonly state: string;
  readonly player: string;
  readonly amount: string;
  readonly reference: string | null;
  readonly isCompensation: boolean;
  readonly attempts: number;
  /** An operator's resolution, when one settled it. */
  readonly resolution: string | null;
}

export interface TokenView {
  readonly token: string;
  /** Every session on the token was answered 200/202 to its `end`. */
  readonly allEnded: boolean;
  /** Terminates the wallet applied for it. */
  readonly terminates: number;
}

export interface FinalView {
  readonly sent: readonly SentMoney[];
  readonly wallet: (id: string) => WalletTx | undefined;
  readonly balanceOf: (player: string) => string | undefined;
  readonly records: readonly RecordView[];
  readonly tokens: readonly TokenView[];
  readonly players: readonly string[];
  readonly startBalance: string;
  /** Calls of this operation and transaction id that reached the wallet (whatever came of them). */
  readonly callsOf: (op: Kind, id: string) => number;
}

const acked = (m: SentMoney): boolean => m.told.some((t) => t.state === 'succeeded' || t.state === 'pending');

/**
 * Refusals the claim gives before anything is recorded or sent (contract 4): they say nothing of
 * the transaction's fate, and the same id may be claimed afresh later (through another session,
 * once the bet settled). IN_PROGRESS says "ask again".
 */
const UNRECORDED = new Set(['VALIDATION_FAILED', 'SESSION_NOT_FOUND', 'SESSION_ENDED', 'ROUND_CLOSED', 'ROUND_HAS_BET', 'BET_NOT_FOUND', 'BET_ALREADY_REFUNDED', 'BET_NOT_OPEN', 'CURRENCY_MISMATCH', 'IN_PROGRESS', 'IDEMPOTENCY_CONFLICT']);

/** The answer speaks for a recorded transaction: acknowledged, or refused after it was claimed. */
export const recorded = (t: Told): boolean => t.state !== 'unanswered' && (t.state !== 'failed' || !UNRECORDED.has(t.code));
const refusal = (t: Told): boolean => t.state === 'failed' && recorded(t);
const refused = (m: SentMoney): boolean => m.told.some(refusal) && !acked(m);

/** The debit is held by the wallet: applied and not reversed. */
function held(view: FinalView, id: string): boolean {
  const tx = view.wallet(id);
  return tx !== undefined && tx.op === 'debit' && tx.rolledBackBy === undefined;
}

/** Answers to one transaction id never contradict each other (contract 5.1, 5.3). */
export function answersAgree(sent: readonly SentMoney[]): string[] {
  const out: string[] = [];
  for (const m of sent) {
    const ok = m.told.some((t) => t.state === 'succeeded' || t.state === 'pending');
    const no = m.told.find(refusal);
    // A bet refused as not durable or with the wallet unknown may be answered again; not here:
    // the model's Redis is a primary and its breaker closed.
    if (ok && no !== undefined) out.push(`${m.kind} ${m.id} was acknowledged and also refused (${no.state === 'failed' ? no.code : ''})`);
    // Only repeats with the same body through a session of the same token land here.
    if (m.told.some((t) => t.state === 'failed' && t.code === 'IDEMPOTENCY_CONFLICT')) out.push(`${m.kind} ${m.id} repeated with the same body was answered IDEMPOTENCY_CONFLICT`);
  }
  return out;
}

/** Checks once everything settled (the model's drain): the contract's end-state invariants. */
export function finalViolations(view: FinalView): string[] {
  const out: string[] = [...answersAgree(view.sent)];
  const limited = specLimited(view);
  const refunds = new Map<string, SentMoney[]>();
  for (const m of view.sent) if (m.kind === 'rollback' && m.bet !== null) refunds.set(m.bet, [...(refunds.get(m.bet) ?? []), m]);

  for (const m of view.sent) {
    const tx = view.wallet(m.id);
    if (m.kind === 'credit' && acked(m) && tx?.op !== 'credit') out.push(`acknowledged win ${m.id} never applied at the wallet`);
    if (m.kind === 'rollback' && acked(m) && m.bet !== null && held(view, m.bet)) out.push(`acknowledged refund ${m.id}: its bet ${m.bet} is still held by the wallet`);
    if (m.kind === 'debit' && refused(m) && held(view, m.id) && !limited.has(m.id)) out.push(`refused bet ${m.id} (${describe(m.told)}) is held by the wallet at the end`);
    // Contract 5.2: a bet is either won or refunded, never both.
    if (m.kind === 'credit' && tx?.op === 'credit' && m.bet !== null && view.wallet(m.bet)?.rolledBackBy !== undefined) out.push(`bet ${m.bet} was both paid win ${m.id} and rolled back`);
    if (m.kind === 'debit' && m.told.some((t) => t.state === 'succeeded') && tx?.rolledBackBy !== undefined) {
      const byEngine = (refunds.get(m.id) ?? []).some((r) => r.id === tx.rolledBackBy);
      if (!byEngine) out.push(`bet ${m.id} answered 200 was rolled back by the gateway (${tx.rolledBackBy})`);
    }
  }

  const byId = new Map(view.sent.map((m) => [m.id, m]));
  for (const r of view.records) {
    const tx = view.wallet(r.id);
    // A refund of a bet the wallet refused for good, or never applied (the refund stood in for its
    // compensation), has nothing to reverse: succeeded, no operator but one who found the bet never
    // applied (the refund's own retries can end without a clear answer).
    const sent = byId.get(r.id);
    const bet = r.kind === 'rollback' && r.reference !== null ? view.records.find((d) => d.id === r.reference) : undefined;
    const betNeverTookMoney = bet !== undefined && (bet.state === 'failed' || view.wallet(bet.id) === undefined);
    if (sent !== undefined && acked(sent) && betNeverTookMoney && (r.state !== 'succeeded' || (r.resolution !== null && r.resolution !== 'bet_not_applied'))) {
      const why = bet.state === 'failed' ? 'refused for good' : 'never applied at the wallet';
      out.push(`acknowledged refund ${r.id} of bet ${bet.id}, ${why}, ended ${r.state}${r.resolution === null ? '' : ` by an operator (${r.resolution})`}`);
    }
    if (r.state === 'failed' && r.kind !== 'debit' && tx !== undefined) out.push(`${r.kind} ${r.id} is failed while the wallet holds it`);
    if ((r.state === 'failed' || r.state === 'compensated') && r.kind === 'debit' && held(view, r.id)) out.push(`debit ${r.id} is ${r.state} while the wallet holds it`);
    // Contract 5.3: attempts counts every wallet try that was sent.
    const calls = view.callsOf(r.kind, r.id);
    if (r.attempts < calls) out.push(`${r.kind} ${r.id} counts ${r.attempts} attempts, the wallet saw ${calls}`);
  }

  out.push(...balanceViolations(view, limited));

  // Dead work holds its token (contract 5.6); the limited debits' compensations stay dead.
  const heldTokens = new Set(view.sent.filter((m) => limited.has(m.id)).map((m) => m.token));
  for (const t of view.tokens) {
    if (t.terminates > 1) out.push(`token ${t.token} terminated ${t.terminates} times`);
    if (t.allEnded && t.terminates === 0 && !heldTokens.has(t.token)) out.push(`token ${t.token}: every session ended, nothing owed, yet never terminated`);
  }
  return out;
}

/**
 * Balances the model predicts from the gateway's records: the start, less every bet recorded
 * succeeded that no succeeded refund gave back, plus every win recorded succeeded. Equal to the
 * wallet's balance when the records tell the truth.
 */
function balanceViolations(view: FinalView, limited: ReadonlySet<string>): string[] {
  const out: string[] = [];
  const refunded = new Set(view.records.filter((r) => r.kind === 'rollback' && r.state === 'succeeded' && r.reference !== null).map((r) => r.reference!));
  for (const player of view.players) {
    const wallet = view.balanceOf(player);
    if (wallet === undefined) continue;
    const mine = view.records.filter((r) => r.player === player);
    const open = mine.filter((r) => !['succeeded', 'failed', 'compensated'].includes(r.state) && !limited.has(r.id) && !(r.reference !== null && r.isCompensation && limited.has(r.reference)));
    if (open.length > 0) {
      out.push(`player ${player}: records not final after the drain: ${open.map((r) => `${r.kind} ${r.id} ${r.state}`).join(', ')}`);
      continue;
    }
    let expected = toMinor(view.startBalance, 2);
    for (const r of mine) {
      const taken = r.state === 'succeeded' || limited.has(r.id);
      if (r.kind === 'debit' && taken && !refunded.has(r.id)) expected -= toMinor(r.amount, 2);
      if (r.kind === 'credit' && r.state === 'succeeded') expected += toMinor(r.amount, 2);
    }
    if (toMinor(wallet, 2) !== expected) out.push(`player ${player}: the wallet holds ${wallet}, the gateway's records say ${fromMinor(expected, 2)}`);
  }
  return out;
}

/**
 * The spec's stated limit (contract 5.9): a bet that closed its round, refused to the engine yet
 * applied by the wallet, cannot be rolled back; its record ends `dead` for an operator.
 */
function specLimited(view: FinalView): Set<string> {
  const closers = new Set(view.sent.filter((m) => m.kind === 'debit' && m.closesRound).map((m) => m.id));
  return new Set(view.records.filter((r) => r.kind === 'debit' && r.state === 'dead' && closers.has(r.id) && held(view, r.id)).map((r) => r.id));
}

/** A terminate reached the wallet: every win or refund acknowledged on the token must be in by then. */
export function owedAtTerminate(token: string, sent: readonly SentMoney[], wallet: (id: string) => WalletTx | undefined): string[] {
  const out: string[] = [];
  for (const m of sent) {
    if (m.token !== token || !acked(m)) continue;
    if (m.kind === 'credit' && wallet(m.id)?.op !== 'credit') out.push(`token terminated while acknowledged win ${m.id} was not applied`);
    if (m.kind === 'rollback' && m.bet !== null) {
      const bet = wallet(m.bet);
      if (bet?.op === 'debit' && bet.rolledBackBy === undefined) out.push(`token terminated while acknowledged refund ${m.id} was not applied`);
    }
  }
  return out;
}

export function describe(told: readonly Told[]): string {
  return told.map((t) => (t.state === 'failed' ? t.code : t.state)).join('→');
}
