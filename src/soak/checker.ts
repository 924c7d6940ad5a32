import { fromMinor, toMinor } from '../lib/money';
import type { TransactionView as LedgerTransaction } from '../sim';
import { Code, codeInfo } from '../wallet/codes';
import { isAccepted, needsResend, shortReply, type EngineHistory, type EngineTransaction, type PlayerStart } from './history';

/**
 * The reconciliation: the engine's history (what it sent, what it was told) against the wallet's
 * ledger and the gateway's own records, per player and per transaction. Pure, so every rule is
 * unit-tested on synthetic histories. Money is bigint minor units throughout.
 *
 * lost    = acknowledged wins/refunds not applied + refused debits applied and not rolled back
 *           + wins paid on a bet the engine was told failed + bets both won and refunded (contract 5.2:
 *           the house's money moved the wrong way, though each call matches what the engine was told)
 * doubled = transactions the wallet applied more than once
 * drift   = players whose wallet balance differs from the one the engine's history implies
 */
export interface LedgerSnapshot {
  readonly players: readonly { readonly playerId: string; readonly balance: string }[];
  readonly transactions: readonly LedgerTransaction[];
}

/** The gateway's record (GET /engine/v1/transactions/{id}), with the reason of a dead one when known. */
export interface RecordView {
  readonly state: string;
  /** Every wallet try, the first included (the contract's record). */
  readonly attempts?: number;
  readonly compensation: null | { readonly transaction_id: string; readonly state: string };
  readonly reason?: string | null;
}

export interface CheckInput {
  readonly history: EngineHistory;
  readonly ledger: LedgerSnapshot;
  /** Per engine transaction id: its record, or null when the gateway has none (404). */
  readonly records: ReadonlyMap<string, RecordView | null>;
  /** Tokens the wallet terminated (a terminate call that succeeded). */
  readonly terminatedTokens: ReadonlySet<string>;
  /** Transaction ids the wallet received a call for (applied or not). */
  readonly calledTransactions: ReadonlySet<string>;
}

export type FindingKind =
  | 'lost-win'
  | 'lost-refund'
  | 'unrolled-debit'
  | 'doubled'
  | 'drift'
  | 'refused-but-applied'
  | 'inconsistent-answers'
  | 'unanswered'
  | 'not-final'
  | 'missing-record'
  | 'record-disagrees'
  | 'unexpected-ledger-entry'
  | 'accepted-after-end'
  | 'not-terminated'
  | 'acknowledged-failed'
  | 'foreign-refund'
  | 'cut-off'
  | 'win-without-bet'
  | 'win-and-refund';

/** Kinds that make up the closing line; the others are reported but are not money out of place by themselves. */
export const COUNTED: Readonly<Record<'lost' | 'doubled' | 'drift', readonly FindingKind[]>> = {
  lost: ['lost-win', 'lost-refund', 'unrolled-debit', 'win-without-bet', 'win-and-refund'],
  doubled: ['doubled'],
  drift: ['drift'],
};

export interface Finding {
  readonly kind: FindingKind;
  readonly playerId: string | null;
  readonly transactionId: string | null;
  readonly detail: string;
}

export interface PlayerReconciliation {
  readonly playerId: string;
  readonly currency: string;
  readonly start: string;
  /** start − accepted bets + accepted wins + accepted refunds. */
  readonly implied: string;
  /** The wallet's balance, or null when the wallet never saw the player. */
  readonly ledger: string | null;
  readonly betsAccepted: number;
  readonly betsRefused: number;
  /** Refused bets the wallet applied and then rolled back (the compensation went through). */
  readonly betsCompensated: number;
  readonly winsAccepted: number;
  readonly winsCredited: number;
  readonly refundsAccepted: number;
  readonly refundsApplied: number;
}

export interface RecordSummary {
  readonly total: number;
  readonly byState: Readonly<Record<string, number>>;
  readonly compensations: number;
  readonly dead: readonly { readonly transactionId: string; readonly reason: string }[];
}

export interface Reconciliation {
  readonly lost: number;
  readonly doubled: number;
  readonly drift: number;
  readonly findings: readonly Finding[];
  readonly players: readonly PlayerReconciliation[];
  readonly records: RecordSummary;
  /** Wallet tokens the engine launched with, and how many of them the wallet terminated. */
  readonly tokens: { readonly total: number; readonly terminated: number };
}

const FINAL = new Set(['succeeded', 'failed', 'compensated', 'dead']);
const ACCEPTED_RECORD = new Set(['succeeded', 'pending', 'dead']);

export type Verdict = 'accepted' | 'refused' | 'unanswered';

/** What the engine was told in the end: any final acceptance wins (the gateway promised it). */
export function verdictOf(tx: EngineTransaction): { verdict: Verdict; inconsistent: boolean } {
  const finals = tx.replies.filter((r) => !needsResend(r));
  const accepted = finals.some(isAccepted);
  const refused = finals.some((r) => !isAccepted(r));
  return { verdict: accepted ? 'accepted' : refused ? 'refused' : 'unanswered', inconsistent: accepted && refused };
}

/** A refused debit the gateway owes a compensation for: unknown outcome or a code of the rollback duty. */
export function unknownOutcome(tx: EngineTransaction): boolean {
  return tx.replies.some(
    (r) => r.kind === 'answer' && r.state === 'failed' && (r.code === 'WALLET_UNAVAILABLE' || (r.walletCode !== null && codeInfo(r.walletCode)?.compensate === true)),
  );
}

export function closingLine(r: Pick<Reconciliation, 'lost' | 'doubled' | 'drift'>): string {
  return `lost: ${r.lost}, doubled: ${r.doubled}, drift: ${r.drift}`;
}

interface Tally {
  implied: bigint;
  betsAccepted: number;
  betsRefused: number;
  betsCompensated: number;
  winsAccepted: number;
  winsCredited: number;
  refundsAccepted: number;
  refundsApplied: number;
}

export function reconcile(input: CheckInput): Reconciliation {
  const { history, ledger, records } = input;
  const findings: Finding[] = [];
  const ledgerById = new Map(ledger.transactions.map((t) => [t.transactionId, t]));
  const balanceOf = new Map(ledger.players.map((p) => [p.playerId, p.balance]));
  const players = new Map(history.players.map((p) => [p.playerId, p]));
  const tallies = new Map<string, Tally>();
  for (const p of history.players) {
    tallies.set(p.playerId, {
      implied: toMinor(p.startBalance, p.scale),
      betsAccepted: 0,
      betsRefused: 0,
      betsCompensated: 0,
      winsAccepted: 0,
      winsCredited: 0,
      refundsAccepted: 0,
      refundsApplied: 0,
    });
  }
  const find = (kind: FindingKind, tx: EngineTransaction | null, detail: string, playerId = tx?.playerId ?? null): void => {
    findings.push({ kind, playerId, transactionId: tx?.transactionId ?? null, detail });
  };

  for (const tx of history.transactions) {
    const player = players.get(tx.playerId);
    const tally = tallies.get(tx.playerId);
    if (!player || !tally) throw new Error(`transaction ${tx.transactionId} names player ${tx.playerId}, who never launched`);
    const amount = toMinor(tx.amount, player.scale);
    const applied = ledgerById.get(tx.transactionId);
    const times = applied?.timesApplied ?? 0;
    const record = records.get(tx.transactionId) ?? null;

    const judged = verdictOf(tx);
    let verdict = judged.verdict;
    const inconsistent = judged.inconsistent;
    if (inconsistent) find('inconsistent-answers', tx, `${tx.kind} was both accepted and refused: ${describeReplies(tx)}`);
    if (verdict === 'unanswered') {
      // The engine never heard back; the gateway's record says what became of it.
      verdict = record !== null && (record.state === 'succeeded' || (tx.kind !== 'debit' && ACCEPTED_RECORD.has(record.state))) ? 'accepted' : 'refused';
      find('unanswered', tx, `${tx.kind} got no final answer in ${tx.replies.length} sends; the record says ${record?.state ?? 'nothing'}`);
    }
    if (verdict === 'accepted' && record === null) find('missing-record', tx, `${tx.kind} was accepted but the gateway has no record of it`);
    // Contract 5.3: what the engine was answered 200/202 for never ends `failed` (dead, if anything).
    if (record?.state === 'failed' && tx.replies.some(isAccepted)) {
      find('acknowledged-failed', tx, `${tx.kind} was answered ${describeReplies(tx)}, yet its record is failed; applied ${times} times`);
    }
    if (!tx.endSent && tx.replies.some(cutOff)) {
      // Contract 5.6: only this session's own end may refuse it; another session's end on the token must not.
      find('cut-off', tx, `${tx.kind} in a session the engine had not ended was refused for an ended session or a terminated token (${describeReplies(tx)})`);
    }
    if (tx.foreignBet && (verdict === 'accepted' || input.calledTransactions.has(tx.transactionId))) {
      // Contract 4: a refund of a bet that is not the round's gets 422 BET_NOT_FOUND with no wallet call.
      const wallet = input.calledTransactions.has(tx.transactionId) ? `reached the wallet (applied ${times} times)` : 'reached no wallet';
      find('foreign-refund', tx, `refund naming bet ${tx.betTransactionId ?? '?'}, not the round's, was answered ${describeReplies(tx)} and ${wallet}; record: ${describeRecord(record)}`);
    }

    if (tx.kind === 'debit') {
      if (tx.afterEnd && (verdict === 'accepted' || times > 0)) {
        find('accepted-after-end', tx, `bet in an ended session was ${verdict === 'accepted' ? 'accepted' : 'refused'} (${describeReplies(tx)}) and applied ${times} times`);
      }
      if (verdict === 'accepted') {
        tally.betsAccepted += 1;
        tally.implied -= amount;
      } else {
        tally.betsRefused += 1;
        if (applied && applied.rolledBack) tally.betsCompensated += 1;
        if (applied && !applied.rolledBack) {
          const why = unknownOutcome(tx) ? 'refused with an unknown outcome' : 'refused';
          find('unrolled-debit', tx, `bet ${why} (${describeReplies(tx)}) was applied by the wallet and never rolled back; record: ${describeRecord(record)}`);
        }
      }
      continue;
    }

    const isWin = tx.kind === 'credit';
    if (record !== null && ((record.state === 'failed' && times >= 1) || (record.state === 'succeeded' && times === 0))) {
      find('record-disagrees', tx, `the gateway's record says ${record.state}, the wallet ${times >= 1 ? 'applied it' : 'never applied it'}`);
    }
    if (verdict === 'accepted') {
      tally.implied += amount;
      if (isWin) tally.winsAccepted += 1;
      else tally.refundsAccepted += 1;
      if (times >= 1) {
        if (isWin) tally.winsCredited += 1;
        else tally.refundsApplied += 1;
      } else {
        find(isWin ? 'lost-win' : 'lost-refund', tx, `${isWin ? 'win' : 'refund'} acknowledged (${describeReplies(tx)}) was never applied; record: ${describeRecord(record)}`);
      }
    } else if (times >= 1) {
      find('refused-but-applied', tx, `${isWin ? 'win' : 'refund'} refused to the engine (${describeReplies(tx)}) was applied by the wallet`);
    }
  }

  findings.push(...betFateFindings(history));
  for (const t of ledger.transactions) {
    if (t.timesApplied > 1) find('doubled', null, `${t.op} ${t.transactionId} was applied ${t.timesApplied} times`, t.playerId);
  }
  findings.push(...unexpectedEntries(history, ledger));
  for (const p of history.players) {
    if (input.terminatedTokens.has(p.token)) continue;
    findings.push({ kind: 'not-terminated', playerId: p.playerId, transactionId: null, detail: `token ${p.token} was never terminated: ${holdsOf(p, input)}` });
  }

  const playerLines: PlayerReconciliation[] = [];
  for (const p of history.players) {
    const tally = tallies.get(p.playerId) as Tally;
    const ledgerBalance = balanceOf.get(p.playerId) ?? null;
    const implied = fromMinor(tally.implied, p.scale);
    const actual = ledgerBalance === null ? toMinor(p.startBalance, p.scale) : toMinor(ledgerBalance, p.scale);
    if (actual !== tally.implied) {
      findings.push({
        kind: 'drift',
        playerId: p.playerId,
        transactionId: null,
        detail: `history implies ${implied} ${p.currency}, the wallet holds ${fromMinor(actual, p.scale)} (off by ${fromMinor(actual - tally.implied, p.scale)})`,
      });
    }
    playerLines.push({ playerId: p.playerId, currency: p.currency, start: p.startBalance, implied, ledger: ledgerBalance, ...counters(tally) });
  }

  const recordSummary = summariseRecords(history, records, findings);
  const count = (kinds: readonly FindingKind[]): number => findings.filter((f) => kinds.includes(f.kind)).length;
  return {
    lost: count(COUNTED.lost),
    doubled: count(COUNTED.doubled),
    drift: count(COUNTED.drift),
    findings,
    players: playerLines,
    records: recordSummary,
    tokens: { total: history.players.length, terminated: history.players.filter((p) => input.terminatedTokens.has(p.token)).length },
  };
}

/**
 * Contract 5.2: a win follows its bet's fate, and refunds and wins exclude each other. A win
 * accepted on a bet the engine was told failed, or a bet with both an accepted win and an accepted
 * refund, moved money the wrong way even where the wallet matches what the engine was told.
 */
function betFateFindings(history: EngineHistory): Finding[] {
  const byId = new Map(history.transactions.map((t) => [t.transactionId, t]));
  const accepted = (t: EngineTransaction): boolean => verdictOf(t).verdict === 'accepted';
  const findings: Finding[] = [];
  const settledBets = new Map<string, Set<EngineTransaction['kind']>>();
  for (const tx of history.transactions) {
    if (tx.kind === 'debit' || tx.foreignBet || tx.betTransactionId === null || !accepted(tx)) continue;
    const bet = byId.get(tx.betTransactionId);
    if (tx.kind === 'credit' && bet !== undefined && !accepted(bet)) {
      findings.push({ kind: 'win-without-bet', playerId: tx.playerId, transactionId: tx.transactionId, detail: `win answered ${describeReplies(tx)} on bet ${bet.transactionId}, which was answered ${describeReplies(bet)}` });
    }
    const kinds = settledBets.get(tx.betTransactionId) ?? new Set();
    kinds.add(tx.kind);
    settledBets.set(tx.betTransactionId, kinds);
  }
  for (const [betId, kinds] of settledBets) {
    const bet = byId.get(betId);
    if (kinds.size > 1) findings.push({ kind: 'win-and-refund', playerId: bet?.playerId ?? null, transactionId: betId, detail: `bet ${betId} has both an accepted win and an accepted refund` });
  }
  return findings;
}

/** A refusal that only an ended session or a terminated token explains. */
function cutOff(r: EngineTransaction['replies'][number]): boolean {
  return r.kind === 'answer' && r.state === 'failed' && (r.code === 'SESSION_ENDED' || r.walletCode === Code.TokenDeactivated);
}

/**
 * Why a token may still be active (contract 5.6): a session whose end was never accepted, or work
 * of the token that is dead or not final. None of them: nothing explains it.
 */
function holdsOf(p: PlayerStart, input: CheckInput): string {
  const { history, records } = input;
  const holds: string[] = [];
  for (const session of history.sessions.filter((s) => s.token === p.token)) {
    const ends = history.ends.filter((e) => e.sessionId === session.sessionId);
    if (ends.length === 0) holds.push(`session ${session.sessionId} was never ended`);
    else if (!ends.some((e) => isAccepted(e.reply))) holds.push(`end of session ${session.sessionId} was answered ${ends.map((e) => shortReply(e.reply)).join(', ')}`);
  }
  for (const tx of history.transactions.filter((t) => t.playerId === p.playerId)) {
    const record = records.get(tx.transactionId) ?? null;
    if (record === null) continue;
    const compensation = record.compensation?.state;
    if (record.state === 'dead' || compensation === 'dead') holds.push(`dead record ${tx.transactionId} (${describeRecord(record)})`);
    else if (!FINAL.has(record.state) || (compensation !== undefined && !FINAL.has(compensation))) holds.push(`record ${tx.transactionId} not final (${describeRecord(record)})`);
  }
  const unanswered = history.unansweredLaunches.filter((u) => u.token === p.token).reduce((n, u) => n + u.sends, 0);
  if (unanswered > 0) holds.push(`${unanswered} launch send(s) on it got no answer: a session one of them opened is ended only by its expiry`);
  return holds.length > 0 ? `held by ${holds.join('; ')}` : 'every session on it was ended and none of its work is pending or dead';
}

function counters(t: Tally): Omit<Tally, 'implied'> {
  const { implied: _implied, ...rest } = t;
  return rest;
}

/** Ledger entries no engine transaction accounts for (a compensation of an engine bet does). */
function unexpectedEntries(history: EngineHistory, ledger: LedgerSnapshot): Finding[] {
  const sent = new Set(history.transactions.map((t) => t.transactionId));
  const bets = new Set(history.transactions.filter((t) => t.kind === 'debit').map((t) => t.transactionId));
  return ledger.transactions
    .filter((t) => !sent.has(t.transactionId) && !(t.op === 'rollback' && t.referenceTransactionId !== undefined && bets.has(t.referenceTransactionId)))
    .map((t) => ({ kind: 'unexpected-ledger-entry' as const, playerId: t.playerId, transactionId: t.transactionId, detail: `${t.op} ${t.amount} that the engine never sent` }));
}

function summariseRecords(history: EngineHistory, records: ReadonlyMap<string, RecordView | null>, findings: Finding[]): RecordSummary {
  const byState: Record<string, number> = {};
  const dead: { transactionId: string; reason: string }[] = [];
  let total = 0;
  let compensations = 0;
  for (const tx of history.transactions) {
    const record = records.get(tx.transactionId) ?? null;
    if (record === null) continue;
    total += 1;
    byState[record.state] = (byState[record.state] ?? 0) + 1;
    if (record.state === 'dead') dead.push({ transactionId: tx.transactionId, reason: record.reason ?? 'no reason given' });
    if (record.compensation !== null) compensations += 1;
    const compensationOpen = record.compensation !== null && !FINAL.has(record.compensation.state);
    if (!FINAL.has(record.state) || compensationOpen) {
      findings.push({ kind: 'not-final', playerId: tx.playerId, transactionId: tx.transactionId, detail: `record still ${describeRecord(record)}` });
    }
  }
  return { total, byState, compensations, dead };
}

function describeReplies(tx: EngineTransaction): string {
  return tx.replies.map(shortReply).join(', ');
}

function describeRecord(record: RecordView | null): string {
  if (record === null) return 'none';
  const comp = record.compensation === null ? '' : `, compensation ${record.compensation.transaction_id} ${record.compensation.state}`;
  return `${record.state}${comp}${record.reason ? ` (${record.reason})` : ''}`;
}
