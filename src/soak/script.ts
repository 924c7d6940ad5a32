import { fromMinor } from '../lib/money';
import { jsonNumber, stringifyJson } from '../lib/json';
import { mulberry32 } from '../sim/faults';
import type { EngineClient } from './engine-client';
import { isAccepted, type EngineHistory, type EngineKind, type EngineTransaction, type PlayerStart, type SessionEnd } from './history';

/**
 * The seeded scripted game engine. Each player launches (GET /launch, JSON), plays its rounds one
 * after another — bet, then a win, a loss (a zero win), a refund or several wins, sometimes with
 * the same body sent twice (one after the other or at once), sometimes several callbacks of one
 * round at once — relaunches now and then (above all while a win is still being retried), ends its
 * session, and sometimes tries one more bet in the ended session. Everything it sends and
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
  sessionsEnded: number;
  /** Ends answered 202: the token still had pending work, terminate waits for it. */
  sessionsEndPending: number;
  /** Bets tried in an ended session (each must be refused). */
  endedSessionBets: number;
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

type RoundShape = 'win' | 'loss' | 'refund' | 'two-wins' | 'concurrent-wins' | 'concurrent-bet';

function shapeOf(rng: Rng): RoundShape {
  const x = rng();
  if (x < 0.4) return 'win';
  if (x < 0.6) return 'loss';
  if (x < 0.7) return 'refund';
  if (x < 0.8) return 'two-wins';
  if (x < 0.9) return 'concurrent-wins';
  return 'concurrent-bet';
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
    sessionsEnded: 0,
    sessionsEndPending: 0,
    endedSessionBets: 0,
  };
  private readonly starts: PlayerStart[] = [];
  private readonly transactions = new Map<string, EngineTransaction>();
  private readonly ends: SessionEnd[] = [];

  constructor(private readonly options: ScriptOptions) {}

  history(): EngineHistory {
    return { players: [...this.starts], transactions: [...this.transactions.values()], ends: [...this.ends] };
  }

  async run(): Promise<void> {
    let next = 0;
    const lanes = Array.from({ length: Math.min(this.options.concurrency, this.options.players) }, async () => {
      while (next < this.options.players) {
        const index = next;
        next += 1;
        await this.playPlayer(index);
      }
    });
    await Promise.all(lanes);
  }

  private async playPlayer(index: number): Promise<void> {
    const o = this.options;
    const rng = playerRng(o.seed, index);
    const player = playerId(index);
    const token = `tok-${o.seed}-${index}`;
    const launchQuery = { token, player_id: player, site_id: o.siteId, currency: o.currency, game_id: o.gameId };
    const first = await o.client.launch(launchQuery, index);
    this.counts.launches += 1;
    if (!first.ok) {
      this.counts.launchFailures += 1;
      return;
    }
    this.starts.push({ playerId: player, currency: o.currency, scale: o.scale, startBalance: first.balance });
    const state = { sessionId: first.sessionId, lane: index };

    const relaunch = async (): Promise<void> => {
      // A page refresh: the same token, a new session; the old session's retries go on.
      const again = await o.client.launch(launchQuery, state.lane + 1);
      this.counts.launches += 1;
      if (again.ok) {
        this.counts.relaunches += 1;
        state.sessionId = again.sessionId;
      } else {
        this.counts.launchFailures += 1;
      }
    };

    for (let r = 0; r < o.rounds; r += 1) {
      const pendingWin = await this.playRound(rng, player, index, r, state);
      if ((pendingWin && rng() < 0.5) || rng() < 0.03) await relaunch();
      this.counts.rounds += 1;
      o.onRound?.();
    }

    const ended = await o.client.send(`/engine/v1/sessions/${state.sessionId}/end`, '{}', [], state.lane);
    this.ends.push({ playerId: player, token, reply: ended.reply });
    if (isAccepted(ended.reply)) this.counts.sessionsEnded += 1;
    if (ended.reply.kind === 'answer' && ended.reply.status === 202) this.counts.sessionsEndPending += 1;
    if (rng() < 0.5) {
      // An engine that missed the end: the bet must be refused (also while the end waits) and never reach the wallet.
      this.counts.endedSessionBets += 1;
      await this.bet(player, state, `p${index}-after-end`, `p${index}-after-end-b`, 100n, true);
    }
  }

  /** One round; true when a win of it is still being retried in the background (answered 202). */
  private async playRound(rng: Rng, player: string, index: number, r: number, state: { sessionId: string; lane: number }): Promise<boolean> {
    const roundId = `p${index}-r${r}`;
    const betId = `${roundId}-b`;
    const stake = BigInt(between(rng, 10, 500));
    const shape = shapeOf(rng);
    const dupAfter = rng() < 0.15;

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
    if (!betOk) return false;

    const winAmount = (): bigint => (stake * BigInt(between(rng, 0, 300))) / 100n;
    const win = (id: string, amount: bigint, closed: boolean): Promise<'succeeded' | 'pending' | 'refused'> =>
      this.settle('credit', player, state, roundId, id, betId, amount, closed);

    let pending = false;
    const note = (outcome: 'succeeded' | 'pending' | 'refused'): void => {
      if (outcome === 'pending') pending = true;
    };
    switch (shape) {
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

  private entry(
    kind: EngineKind,
    player: string,
    sessionId: string,
    roundId: string,
    id: string,
    amount: string,
    bet: string | null,
    closed: boolean,
    afterEnd = false,
  ): EngineTransaction {
    let tx = this.transactions.get(id);
    if (!tx) {
      tx = { transactionId: id, kind, playerId: player, sessionId, roundId, amount, betTransactionId: bet, roundClosed: closed, afterEnd, replies: [] };
      this.transactions.set(id, tx);
      if (kind === 'debit') this.counts.bets += 1;
      else if (kind === 'credit') this.counts.wins += 1;
      else this.counts.refunds += 1;
    }
    return tx;
  }

  /** One send of a bet (the same body every time for this id); true when it was accepted. */
  private async bet(player: string, state: { sessionId: string; lane: number }, roundId: string, id: string, stake: bigint, afterEnd = false): Promise<boolean> {
    const amount = fromMinor(stake, this.options.scale);
    const tx = this.entry('debit', player, state.sessionId, roundId, id, amount, null, false, afterEnd);
    const body = stringifyJson({ round_id: roundId, transaction_id: id, amount: jsonNumber(amount), round_closed: false });
    const answered = await this.options.client.send(`/engine/v1/sessions/${tx.sessionId}/bet`, body, tx.replies, state.lane);
    return isAccepted(answered.reply);
  }

  private async settle(
    kind: 'credit' | 'rollback',
    player: string,
    state: { sessionId: string; lane: number },
    roundId: string,
    id: string,
    bet: string,
    minor: bigint,
    closed: boolean,
  ): Promise<'succeeded' | 'pending' | 'refused'> {
    const amount = fromMinor(minor, this.options.scale);
    const tx = this.entry(kind, player, state.sessionId, roundId, id, amount, bet, closed);
    const body = stringifyJson({ round_id: roundId, transaction_id: id, bet_transaction_id: bet, amount: jsonNumber(amount), round_closed: closed });
    // The session the transaction was first sent in: a duplicate after a relaunch repeats the same request.
    const answered = await this.options.client.send(`/engine/v1/sessions/${tx.sessionId}/${kind === 'credit' ? 'win' : 'refund'}`, body, tx.replies, state.lane);
    if (!isAccepted(answered.reply)) return 'refused';
    return answered.reply.kind === 'answer' && answered.reply.status === 202 ? 'pending' : 'succeeded';
  }
}
