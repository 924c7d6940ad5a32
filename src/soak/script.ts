import { fromMinor } from '../lib/money';
import { jsonNumber, stringifyJson } from '../lib/json';
import { mulberry32 } from '../sim/faults';
import type { EngineClient } from './engine-client';
import {
  isAccepted,
  shortReply,
  type EngineHistory,
  type EngineTransaction,
  type Interleaving,
  type LaunchedSession,
  type PlayerStart,
  type Reply,
  type SessionEnd,
  type UnansweredLaunches,
} from './history';

/**
 * The seeded scripted game engine. Each player launches (GET /launch, JSON), plays its rounds one
 * after another — bet, then a win, a loss (a zero win), a refund or several wins, sometimes with
 * the same body sent twice (one after the other or at once), sometimes several callbacks of one
 * round at once, now and then a refund naming a bet that is not the round's — relaunches now and
 * then (above all while a win is still being retried) and ends the older session while the newer
 * one plays on, ends its last session (plainly, right after a win answered 202, or at the same
 * moment as a win), and sometimes tries one more bet in the ended session. Everything it sends and
 * everything it is told goes into the history the checker reads.
 */
export interface ScriptOptions {
  readonly seed: number;
  readonly players: number;
  readonly rounds: number;
  /** Players playing at the same time. */
  readonly concurrency: number;
  readonly currency: string;
  readonly scale: number;
  readonly siteId: string;
  readonly gameId: string;
  readonly client: EngineClient;
  /** Called after every round (progress). */
  readonly onRound?: () => void;
  /** Wallet behaviour the `end` interleavings ask for; without it they happen only when the wallet's own faults line them up. */
  readonly arrange?: Arrangements;
  /**
   * Players spread over several wallets, one engine each: this engine plays the wallet `wallet` of
   * `wallets`, its player j being the run's player j × wallets + wallet (that one's seeded script
   * and gateway lane). Its ids (player, token, round, transaction) are made from j, so every wallet
   * holds the same ids: wallets are separate worlds (contract 11). Unset: one wallet.
   */
  readonly spread?: { readonly wallet: number; readonly wallets: number };
}

/** What the run arranges at the wallet for one interleaving (the engine itself only sends requests). */
export interface Arrangements {
  /** The wallet refuses this win's credit `times` times with a retry code: the engine gets 202 and the win is retried in the background. */
  holdWin(transactionId: string, times: number): void;
  /** The next terminate reaches the wallet late (still within the gateway's deadline): a win can be claimed while it is at the wallet. */
  slowTerminate(): void;
  /** This bet's debit reaches the wallet late (sometimes past the gateway's deadline): its win is sent while it is still there. */
  slowBet(transactionId: string): void;
  /** This bet is applied and its answer lost, and its compensation is refused for good: it ends dead, for the operator. */
  deadCompensation(transactionId: string): void;
}

export interface ScriptCounts {
  rounds: number;
  bets: number;
  wins: number;
  refunds: number;
  /** Bodies sent again on purpose (after an answer, or at the same time as the first). */
  duplicates: number;
  /** Rounds with callbacks sent at the same time. */
  concurrentRounds: number;
  launches: number;
  relaunches: number;
  launchFailures: number;
  /** Launch sends that got no answer or a 5xx (each may have opened a session only its expiry ends). */
  launchesUnanswered: number;
  sessionsEnded: number;
  /** Ends answered 202: the token still had pending work, terminate waits for it. */
  sessionsEndPending: number;
  /** Bets tried in an ended session (each must be refused). */
  endedSessionBets: number;
  /** Ends of a session older than the token's newest (after a relaunch). */
  olderSessionsEnded: number;
  /** Transactions repeated byte for byte through a relaunched session of their token. */
  relaunchRepeats: number;
}

/** The largest player id the contract allows, counting down: every id needs all 64 bits kept. */
const TOP_PLAYER_ID = 18446744073709551615n;

export function playerId(index: number): string {
  return (TOP_PLAYER_ID - BigInt(index)).toString();
}

type Rng = () => number;

/** Per-player generator: the same seed gives every player the same script. */
function playerRng(seed: number, index: number): Rng {
  return mulberry32((Math.imul(seed, 0x9e3779b1) ^ Math.imul(index + 1, 0x85ebca6b)) >>> 0);
}

const between = (rng: Rng, lo: number, hi: number): number => lo + Math.floor(rng() * (hi - lo + 1));

type RoundShape = 'win' | 'loss' | 'refund' | 'two-wins' | 'concurrent-wins' | 'concurrent-bet' | 'win-before-bet' | 'refund-win-pair' | 'dead-compensation';

/** How a player's last session ends: after its last round, right after that round's win was answered 202, or at the same moment as that win. */
type Ending = 'plain' | 'after-pending-win' | 'with-win';

function endingOf(rng: Rng): Ending {
  const x = rng();
  if (x < 0.5) return 'plain';
  if (x < 0.75) return 'after-pending-win';
  return 'with-win';
}

/** Share of rounds with a refund naming a bet that is not the round's. */
const FOREIGN_REFUND_RATE = 0.05;
/** Share of players who launch once on a token in another currency and settle a bet through it. */
const CURRENCY_RELAUNCH_RATE = 0.2;

interface PlayerState {
  /** The newest session: where the player plays. */
  sessionId: string;
  readonly lane: number;
  /** Sessions on the token not ended yet, oldest first (the newest last). */
  readonly open: string[];
  /** The previous round's bet, for a refund naming another round's bet. */
  previousBet: { readonly id: string; readonly stake: bigint } | undefined;
  /** The last round's transactions, for a repeat through a relaunched session. */
  lastRound: readonly string[];
  /** The round in which the player launches on a token in another currency, if any. */
  readonly currencyRound: number | undefined;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function shapeOf(rng: Rng): RoundShape {
  const x = rng();
  if (x < 0.02) return 'win-before-bet';
  if (x < 0.04) return 'refund-win-pair';
  if (x < 0.05) return 'dead-compensation';
  if (x < 0.4) return 'win';
  if (x < 0.6) return 'loss';
  if (x < 0.7) return 'refund';
  if (x < 0.8) return 'two-wins';
  if (x < 0.9) return 'concurrent-wins';
  return 'concurrent-bet';
}

/**
 * The run's players 0…players−1 in turn, `concurrency` at a time, player p on the engine of wallet
 * p mod n (as that engine's player ⌊p / n⌋): the players of every wallet play side by side.
 */
export async function playAll(engines: readonly ScriptedEngine[], players: number, concurrency: number): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(concurrency, players) }, async () => {
    while (next < players) {
      const index = next;
      next += 1;
      await (engines[index % engines.length] as ScriptedEngine).playPlayer(Math.floor(index / engines.length));
    }
  });
  await Promise.all(lanes);
}

export class ScriptedEngine {
  readonly counts: ScriptCounts = {
    rounds: 0,
    bets: 0,
    wins: 0,
    refunds: 0,
    duplicates: 0,
    concurrentRounds: 0,
    launches: 0,
    relaunches: 0,
    launchFailures: 0,
    launchesUnanswered: 0,
    sessionsEnded: 0,
    sessionsEndPending: 0,
    endedSessionBets: 0,
    olderSessionsEnded: 0,
    relaunchRepeats: 0,
  };
  private readonly starts: PlayerStart[] = [];
  private readonly sessions: LaunchedSession[] = [];
  private readonly unansweredLaunches: UnansweredLaunches[] = [];
  private readonly transactions = new Map<string, EngineTransaction>();
  private readonly ends: SessionEnd[] = [];
  private readonly interleavings: Interleaving[] = [];
  /** Sessions whose `end` the engine sent (marked before the send, so a win sent with it counts as racing it). */
  private readonly endSent = new Set<string>();

  constructor(private readonly options: ScriptOptions) {}

  history(): EngineHistory {
    return {
      players: [...this.starts],
      sessions: [...this.sessions],
      unansweredLaunches: [...this.unansweredLaunches],
      transactions: [...this.transactions.values()],
      ends: [...this.ends],
      interleavings: [...this.interleavings],
    };
  }

  async run(): Promise<void> {
    await playAll([this], this.options.players, this.options.concurrency);
  }

  /** Plays this engine's player `index` (its ids); the run's player number picks the script and the lane. */
  async playPlayer(index: number): Promise<void> {
    const o = this.options;
    const runIndex = index * (o.spread?.wallets ?? 1) + (o.spread?.wallet ?? 0);
    const rng = playerRng(o.seed, runIndex);
    const player = playerId(index);
    const token = `tok-${o.seed}-${index}`;
    const launchQuery = { token, player_id: player, site_id: o.siteId, currency: o.currency, game_id: o.gameId };
    const noteUnanswered = (sends: number): void => {
      if (sends === 0) return;
      this.counts.launchesUnanswered += sends;
      this.unansweredLaunches.push({ token, sends });
    };
    const first = await o.client.launch(launchQuery, runIndex);
    this.counts.launches += 1;
    noteUnanswered(first.unanswered);
    if (!first.ok) {
      this.counts.launchFailures += 1;
      return;
    }
    this.starts.push({ playerId: player, token, currency: o.currency, scale: o.scale, startBalance: first.balance });
    this.sessions.push({ playerId: player, token, sessionId: first.sessionId });
    const currencyRound = rng() < CURRENCY_RELAUNCH_RATE ? between(rng, 0, o.rounds - 2) : undefined;
    const state: PlayerState = { sessionId: first.sessionId, lane: runIndex, open: [first.sessionId], previousBet: undefined, lastRound: [], currencyRound };

    const relaunch = async (): Promise<void> => {
      // A page refresh: the same token, a new session; the old session's retries go on.
      const again = await o.client.launch(launchQuery, state.lane + 1);
      this.counts.launches += 1;
      noteUnanswered(again.unanswered);
      if (again.ok) {
        this.counts.relaunches += 1;
        state.sessionId = again.sessionId;
        state.open.push(again.sessionId);
        this.sessions.push({ playerId: player, token, sessionId: again.sessionId });
        // A game page reloaded mid-round sends the round's calls again, through the new session.
        if (rng() < 0.7) await this.repeatThrough(player, state, state.lastRound);
      } else {
        this.counts.launchFailures += 1;
      }
    };
    /** Ends every session but the newest; the newer one plays on (`during` runs at the same time when given). */
    const endOlder = async (during?: () => Promise<unknown>): Promise<void> => {
      const older = state.open.splice(0, state.open.length - 1);
      const ended = Promise.all(older.map((sessionId) => this.endSession(player, token, sessionId, state.lane)));
      const [replies] = await Promise.all([ended, during?.()]);
      this.counts.olderSessionsEnded += older.length;
      older.forEach((sessionId, i) => {
        const reply = replies[i] as Reply;
        const when = during ? 'with the newer session\'s round' : 'before the newer session\'s round';
        this.interleavings.push({ kind: 'end-older-session', playerId: player, sessionId, transactionId: null, outcome: `end ${shortReply(reply)} ${when}` });
      });
    };

    const ending = endingOf(rng);
    let lastPending = false;
    let lastSession = state.sessionId;
    for (let r = 0; r < o.rounds; r += 1) {
      const last = r === o.rounds - 1;
      const finale = last && ending !== 'plain';
      const play = (): Promise<boolean> => (finale ? this.playFinale(rng, player, token, index, r, state, ending) : this.playRound(rng, player, index, r, state));
      if (state.open.length > 1 && (last || rng() < 0.6)) {
        // A relaunch left an older session open: end it while the newer one keeps playing.
        if (!finale && rng() < 0.5) {
          let pending = false;
          await endOlder(async () => (pending = await play()));
          lastPending = pending;
        } else {
          await endOlder();
          lastPending = await play();
        }
      } else {
        lastPending = await play();
      }
      lastSession = state.sessionId;
      // After a finale the session is ended: no relaunch then.
      if (!finale && ((lastPending && rng() < 0.5) || rng() < 0.03)) await relaunch();
      this.counts.rounds += 1;
      o.onRound?.();
    }

    // The sessions still open, newest first: a relaunch after the last round leaves the older one to end last.
    for (const sessionId of state.open.splice(0).reverse()) {
      const reply = await this.endSession(player, token, sessionId, state.lane);
      if (sessionId === lastSession && lastPending) {
        this.interleavings.push({ kind: 'end-while-win-pending', playerId: player, sessionId, transactionId: null, outcome: `win 202 in the last round, end ${shortReply(reply)}` });
      }
    }
    if (rng() < 0.5) {
      // An engine that missed the end: the bet must be refused (also while the end waits) and never reach the wallet.
      this.counts.endedSessionBets += 1;
      await this.bet(player, state, `p${index}-after-end`, `p${index}-after-end-b`, 100n, true);
    }
  }

  /** Sends `end` of one session (marked as sent first, so a win sent with it counts as racing it). */
  private async endSession(player: string, token: string, sessionId: string, lane: number): Promise<Reply> {
    this.endSent.add(sessionId);
    const ended = await this.options.client.send(`/engine/v1/sessions/${sessionId}/end`, '{}', [], lane);
    this.ends.push({ playerId: player, token, sessionId, reply: ended.reply });
    if (isAccepted(ended.reply)) this.counts.sessionsEnded += 1;
    if (ended.reply.kind === 'answer' && ended.reply.status === 202) this.counts.sessionsEndPending += 1;
    return ended.reply;
  }

  /**
   * The last round of a player whose session ends with its win: the bet, then either the win
   * (held at the wallet, so it is answered 202) and `end` right after it, or `end` and the win at
   * the same moment (the win 0–300 ms later, sometimes held, sometimes with a slow terminate).
   * A win answered 200/202 must be credited exactly once; one answered 409 SESSION_ENDED is refused.
   */
  private async playFinale(rng: Rng, player: string, token: string, index: number, r: number, state: PlayerState, ending: Ending): Promise<boolean> {
    const o = this.options;
    const roundId = `p${index}-r${r}`;
    const betId = `${roundId}-b`;
    const winId = `${roundId}-w`;
    const stake = BigInt(between(rng, 10, 500));
    const amount = (stake * BigInt(between(rng, 0, 300))) / 100n;
    const sessionId = state.sessionId;
    const betOk = await this.bet(player, state, roundId, betId, stake);
    state.open.splice(state.open.indexOf(sessionId), 1);
    if (!betOk) {
      await this.endSession(player, token, sessionId, state.lane);
      return false;
    }
    const win = (): Promise<'succeeded' | 'pending' | 'refused'> => this.settle('credit', player, state, roundId, winId, betId, amount, true);
    const lastReply = (): Reply => (this.transactions.get(winId) as EngineTransaction).replies.at(-1) as Reply;

    if (ending === 'after-pending-win') {
      o.arrange?.holdWin(winId, between(rng, 3, 6));
      const outcome = await win();
      const endReply = await this.endSession(player, token, sessionId, state.lane);
      if (outcome === 'pending') {
        this.interleavings.push({ kind: 'end-while-win-pending', playerId: player, sessionId, transactionId: winId, outcome: `win 202, end ${shortReply(endReply)}` });
      }
      return outcome === 'pending';
    }
    if (rng() < 0.5) o.arrange?.holdWin(winId, between(rng, 2, 5));
    if (rng() < 0.5) o.arrange?.slowTerminate();
    const lag = between(rng, 0, 300);
    const [endReply, outcome] = await Promise.all([this.endSession(player, token, sessionId, state.lane), sleep(lag).then(win)]);
    this.interleavings.push({
      kind: 'end-while-win-in-flight',
      playerId: player,
      sessionId,
      transactionId: winId,
      outcome: `win ${shortReply(lastReply())}, end ${shortReply(endReply)}`,
    });
    return outcome === 'pending';
  }

  /** One round; true when a win of it is still being retried in the background (answered 202). */
  private async playRound(rng: Rng, player: string, index: number, r: number, state: PlayerState): Promise<boolean> {
    const roundId = `p${index}-r${r}`;
    const betId = `${roundId}-b`;
    const stake = BigInt(between(rng, 10, 500));
    const shape = shapeOf(rng);
    const dupAfter = rng() < 0.15;

    state.lastRound = [betId];
    if (shape === 'win-before-bet') return this.winBeforeBet(rng, player, state, roundId, betId, stake);
    if (shape === 'dead-compensation') this.options.arrange?.deadCompensation(betId);
    let betOk: boolean;
    if (shape === 'concurrent-bet') {
      this.counts.concurrentRounds += 1;
      this.counts.duplicates += 1;
      const both = await Promise.all([this.bet(player, state, roundId, betId, stake), this.bet(player, state, roundId, betId, stake)]);
      betOk = both.some(Boolean);
    } else {
      betOk = await this.bet(player, state, roundId, betId, stake);
      if (dupAfter) {
        this.counts.duplicates += 1;
        await this.bet(player, state, roundId, betId, stake);
      }
    }
    if (rng() < FOREIGN_REFUND_RATE) await this.foreignRefund(rng, player, state, roundId, stake, betOk);
    state.previousBet = { id: betId, stake };
    if (!betOk) return false;
    if (state.currencyRound === r) await this.otherCurrency(player, index, state, roundId, betId, stake);

    const winAmount = (): bigint => (stake * BigInt(between(rng, 0, 300))) / 100n;
    const win = (id: string, amount: bigint, closed: boolean): Promise<'succeeded' | 'pending' | 'refused'> => {
      if (!state.lastRound.includes(id)) state.lastRound = [...state.lastRound, id];
      return this.settle('credit', player, state, roundId, id, betId, amount, closed);
    };

    let pending = false;
    const note = (outcome: 'succeeded' | 'pending' | 'refused'): void => {
      if (outcome === 'pending') pending = true;
    };
    switch (shape) {
      case 'refund-win-pair': {
        // Refunds and wins exclude each other (contract 5.2): in an open round, the second is refused.
        const refundFirst = rng() < 0.5;
        const refund = (): Promise<'succeeded' | 'pending' | 'refused'> => this.settle('rollback', player, state, roundId, `${roundId}-f`, betId, stake, false);
        const first = refundFirst ? await refund() : await win(`${roundId}-w`, winAmount(), false);
        const second = refundFirst ? await win(`${roundId}-w`, winAmount(), false) : await refund();
        [first, second].forEach(note);
        const reply = (id: string): string => shortReply((this.transactions.get(id) as EngineTransaction).replies.at(-1) as Reply);
        const [a, b] = refundFirst ? [`refund ${reply(`${roundId}-f`)}`, `win ${reply(`${roundId}-w`)}`] : [`win ${reply(`${roundId}-w`)}`, `refund ${reply(`${roundId}-f`)}`];
        this.interleavings.push({ kind: 'refund-win-pair', playerId: player, sessionId: state.sessionId, transactionId: betId, outcome: `${a}, then ${b}` });
        break;
      }
      case 'win':
      case 'concurrent-bet': {
        const amount = winAmount();
        note(await win(`${roundId}-w`, amount, true));
        if (dupAfter) {
          this.counts.duplicates += 1;
          note(await win(`${roundId}-w`, amount, true));
        }
        break;
      }
      case 'loss':
        note(await win(`${roundId}-w`, 0n, true));
        break;
      case 'refund': {
        note(await this.settle('rollback', player, state, roundId, `${roundId}-f`, betId, stake, true));
        if (dupAfter) {
          this.counts.duplicates += 1;
          note(await this.settle('rollback', player, state, roundId, `${roundId}-f`, betId, stake, true));
        }
        break;
      }
      case 'two-wins':
        note(await win(`${roundId}-w1`, winAmount(), false));
        // The closing win: held (202) while w1 is still retried.
        note(await win(`${roundId}-w2`, winAmount(), true));
        break;
      case 'concurrent-wins': {
        // Two wins and a duplicate of the first, all at once; the round is closed afterwards.
        this.counts.concurrentRounds += 1;
        this.counts.duplicates += 1;
        const a = winAmount();
        const outcomes = await Promise.all([win(`${roundId}-w1`, a, false), win(`${roundId}-w1`, a, false), win(`${roundId}-w2`, winAmount(), false)]);
        outcomes.forEach(note);
        note(await win(`${roundId}-w3`, 0n, true));
        break;
      }
    }
    return pending;
  }

  /**
   * A win sent while its bet is still at the wallet (the debit held there, sometimes past the
   * gateway's deadline): the win waits for its bet (`409 IN_PROGRESS`, repeated by the engine) and
   * is taken only once the bet succeeded; after a refused bet it is `409 BET_NOT_OPEN` (contract 5.2).
   */
  private async winBeforeBet(rng: Rng, player: string, state: PlayerState, roundId: string, betId: string, stake: bigint): Promise<boolean> {
    this.options.arrange?.slowBet(betId);
    const winId = `${roundId}-w`;
    state.lastRound = [betId, winId];
    const amount = (stake * BigInt(between(rng, 0, 300))) / 100n;
    const lag = between(rng, 50, 300);
    const [betOk, outcome] = await Promise.all([
      this.bet(player, state, roundId, betId, stake),
      sleep(lag).then(() => this.settle('credit', player, state, roundId, winId, betId, amount, true)),
    ]);
    const replies = (this.transactions.get(winId) as EngineTransaction).replies;
    this.interleavings.push({
      kind: 'win-before-bet-answer',
      playerId: player,
      sessionId: state.sessionId,
      transactionId: winId,
      outcome: `bet ${betOk ? 'accepted' : 'refused'}, win ${shortReply(replies[0] as Reply)}${replies.length > 1 ? ` … ${shortReply(replies.at(-1) as Reply)}` : ''}`,
    });
    state.previousBet = { id: betId, stake };
    return outcome === 'pending';
  }

  /**
   * The last round's calls sent again, byte for byte, through the relaunched session: each gets
   * its stored outcome and reaches the wallet no more (contract 5.1).
   */
  private async repeatThrough(player: string, state: PlayerState, ids: readonly string[]): Promise<void> {
    for (const id of ids) {
      const tx = this.transactions.get(id);
      if (tx === undefined || tx.replies.length === 0) continue;
      const before = tx.replies.at(-1) as Reply;
      const route = tx.kind === 'debit' ? 'bet' : tx.kind === 'credit' ? 'win' : 'refund';
      await this.options.client.send(`/engine/v1/sessions/${state.sessionId}/${route}`, this.bodyOf(tx), tx.replies, state.lane);
      this.counts.relaunchRepeats += 1;
      this.interleavings.push({ kind: 'relaunch-repeat', playerId: player, sessionId: state.sessionId, transactionId: id, outcome: `${route} ${shortReply(before)} → ${shortReply(tx.replies.at(-1) as Reply)}` });
    }
  }

  /** The exact body of a transaction, as every send of it carries. */
  private bodyOf(tx: EngineTransaction): string {
    const amount = jsonNumber(tx.amount);
    return tx.kind === 'debit'
      ? stringifyJson({ round_id: tx.roundId, transaction_id: tx.transactionId, amount, round_closed: tx.roundClosed })
      : stringifyJson({ round_id: tx.roundId, transaction_id: tx.transactionId, bet_transaction_id: tx.betTransactionId, amount, round_closed: tx.roundClosed });
  }

  /**
   * The player launches on a token in another currency (a multi-currency wallet) and, through that
   * session, refunds this round's bet with its amount's digits read in the other currency (10.00 EUR
   * as 1000) and wins it: both must be `422 CURRENCY_MISMATCH` with no wallet call (contract 5.2).
   * The session is ended at once.
   */
  private async otherCurrency(player: string, index: number, state: PlayerState, roundId: string, betId: string, stake: bigint): Promise<void> {
    const o = this.options;
    const currency = o.currency === 'JPY' ? 'USD' : 'JPY';
    const token = `tok-${o.seed}-${index}-${currency}`;
    const launched = await o.client.launch({ token, player_id: player, site_id: o.siteId, currency, game_id: o.gameId }, state.lane);
    this.counts.launches += 1;
    if (!launched.ok) {
      this.counts.launchFailures += 1;
      return;
    }
    this.sessions.push({ playerId: player, token, sessionId: launched.sessionId });
    const other: PlayerState = { ...state, sessionId: launched.sessionId };
    const minorText = stake.toString();
    const sent = [
      ['refund', await this.settle('rollback', player, other, roundId, `${roundId}-cf`, betId, stake, false, false, minorText)],
      ['win', await this.settle('credit', player, other, roundId, `${roundId}-cw`, betId, stake, false, false, minorText)],
    ] as const;
    const reply = (id: string): string => shortReply((this.transactions.get(id) as EngineTransaction).replies.at(-1) as Reply);
    await this.endSession(player, token, launched.sessionId, state.lane);
    this.interleavings.push({
      kind: 'currency-relaunch',
      playerId: player,
      sessionId: launched.sessionId,
      transactionId: betId,
      outcome: `${currency} ${sent.map(([what]) => `${what} ${reply(`${roundId}-c${what === 'refund' ? 'f' : 'w'}`)}`).join(', ')}`,
    });
  }

  /**
   * A refund in this round naming the previous round's bet (with that bet's amount) or a bet never
   * sent, right after this round's bet was answered — also while a refused bet's compensation is
   * still at work. It must get 422 BET_NOT_FOUND and reach no wallet.
   */
  private async foreignRefund(rng: Rng, player: string, state: PlayerState, roundId: string, stake: bigint, betOk: boolean): Promise<void> {
    const other = state.previousBet !== undefined && rng() < 0.5 ? state.previousBet : { id: `${roundId}-nb`, stake };
    const closed = rng() < 0.5;
    const id = `${roundId}-xf`;
    await this.settle('rollback', player, state, roundId, id, other.id, other.stake, closed, true);
    const reply = (this.transactions.get(id) as EngineTransaction).replies.at(-1) as Reply;
    this.interleavings.push({
      kind: 'foreign-refund',
      playerId: player,
      sessionId: state.sessionId,
      transactionId: id,
      outcome: `refund ${shortReply(reply)} (round's bet ${betOk ? 'accepted' : 'refused'})`,
    });
  }

  private entry(
    fields: Pick<EngineTransaction, 'kind' | 'playerId' | 'sessionId' | 'roundId' | 'transactionId' | 'amount' | 'betTransactionId' | 'roundClosed' | 'afterEnd' | 'foreignBet'>,
  ): EngineTransaction {
    let tx = this.transactions.get(fields.transactionId);
    if (!tx) {
      tx = { ...fields, endSent: this.endSent.has(fields.sessionId), replies: [] };
      this.transactions.set(fields.transactionId, tx);
      if (tx.kind === 'debit') this.counts.bets += 1;
      else if (tx.kind === 'credit') this.counts.wins += 1;
      else this.counts.refunds += 1;
    }
    return tx;
  }

  /** One send of a bet (the same body every time for this id); true when it was accepted. */
  private async bet(player: string, state: PlayerState, roundId: string, id: string, stake: bigint, afterEnd = false): Promise<boolean> {
    const amount = fromMinor(stake, this.options.scale);
    const tx = this.entry({
      kind: 'debit',
      playerId: player,
      sessionId: state.sessionId,
      roundId,
      transactionId: id,
      amount,
      betTransactionId: null,
      roundClosed: false,
      afterEnd,
      foreignBet: false,
    });
    const answered = await this.options.client.send(`/engine/v1/sessions/${tx.sessionId}/bet`, this.bodyOf(tx), tx.replies, state.lane);
    return isAccepted(answered.reply);
  }

  private async settle(
    kind: 'credit' | 'rollback',
    player: string,
    state: PlayerState,
    roundId: string,
    id: string,
    bet: string,
    minor: bigint,
    closed: boolean,
    foreignBet = false,
    /** The amount's text as sent, when it is not `minor` at the run's scale (another currency's). */
    amountText?: string,
  ): Promise<'succeeded' | 'pending' | 'refused'> {
    const amount = amountText ?? fromMinor(minor, this.options.scale);
    const tx = this.entry({
      kind,
      playerId: player,
      sessionId: state.sessionId,
      roundId,
      transactionId: id,
      amount,
      betTransactionId: bet,
      roundClosed: closed,
      afterEnd: false,
      foreignBet,
    });
    // The session the transaction was first sent in: a duplicate after a relaunch repeats the same request.
    const answered = await this.options.client.send(`/engine/v1/sessions/${tx.sessionId}/${kind === 'credit' ? 'win' : 'refund'}`, this.bodyOf(tx), tx.replies, state.lane);
    if (!isAccepted(answered.reply)) return 'refused';
    return answered.reply.kind === 'answer' && answered.reply.status === 202 ? 'pending' : 'succeeded';
  }
}
