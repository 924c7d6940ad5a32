import { randomBytes } from 'node:crypto';
import type autocannon from 'autocannon';
import { OPERATION_PATH } from '../src/wallet/protocol';
import { basicAuthHeader, hmacSigner } from '../src/wallet/signer';

/**
 * What the bench sends: signed wallet calls straight at the simulator (case a) and engine calls
 * at the reference server or the gateway (cases b, c). Bodies are built as text (ids and amounts
 * as raw JSON numbers, as the wire wants them) so the load generator spends little per request;
 * every request gets a fresh transaction id and round.
 */
export const CREDENTIALS = Object.freeze({
  basicUser: 'bench',
  basicPassword: 'bench-password',
  signingSecret: 'bench-signing-secret',
  engineKey: 'bench-engine-key',
  /** Ids near 2^64−1, so the lossless path is the one measured. */
  providerId: '18446744073709551615',
});

export const BET_AMOUNT = '0.01';
export const WIN_AMOUNT = '0.02';

/** A player as the wallet knows it: one per load connection. */
export interface WalletIdentity {
  readonly token: string;
  readonly player_id: string;
  readonly site_id: string;
  readonly game_id: string;
  readonly currency: string;
}

/** A bet (or debit) that succeeded: what its win (credit) refers to. */
export interface Placed {
  /** Index into the identities (direct) or sessions (engine) it was placed with. */
  readonly owner: number;
  readonly roundId: string;
  readonly transactionId: string;
}

/** Ids unique to one bench run, short enough for the 36-character limit. */
export class Ids {
  private readonly tag = randomBytes(3).toString('hex');
  private n = 0;

  next(kind: string): string {
    return `${kind}-${this.tag}-${(this.n++).toString(36)}`;
  }
}

/** `count` fresh players; `label` keeps each case's players (and tokens) apart. */
export function identities(count: number, label: string): WalletIdentity[] {
  const tag = randomBytes(3).toString('hex');
  const base = 18446744073709551615n - BigInt(randomBytes(3).readUIntBE(0, 3)) * 1000n;
  // Player ids near 2^64−1: every one needs all 20 digits kept.
  return Array.from({ length: count }, (_, i) => ({
    token: `tok-${label}-${tag}-${i}`,
    player_id: (base - BigInt(i)).toString(),
    site_id: '9007199254740993',
    game_id: 'bench-slot',
    currency: 'EUR',
  }));
}

/** Session fields of a wallet body, without the braces. */
function sessionJson(id: WalletIdentity): string {
  return `"token":"${id.token}","player_id":${id.player_id},"site_id":${id.site_id},"provider_id":${CREDENTIALS.providerId},"game_id":"${id.game_id}","currency":"${id.currency}"`;
}

export function authenticateBody(id: WalletIdentity): string {
  return `{${sessionJson(id)}}`;
}

const signer = hmacSigner(CREDENTIALS.signingSecret, 'sha256', 'hex');
const walletAuthorization = basicAuthHeader(CREDENTIALS.basicUser, CREDENTIALS.basicPassword);

export function walletHeaders(body: string): Record<string, string> {
  return { 'content-type': 'application/json', authorization: walletAuthorization, 'x-request-signature': signer.sign(body) };
}

const engineAuthorization = `Bearer ${CREDENTIALS.engineKey}`;
/** A new object each time: autocannon adds Content-Length to the headers it is given. */
const engineHeaders = (): Record<string, string> => ({ 'content-type': 'application/json', authorization: engineAuthorization });

interface Built {
  readonly path: string;
  readonly body: string;
  readonly headers: Record<string, string>;
  /** A bet or debit: recorded as placed once it is answered 200. */
  readonly placed?: Placed;
}

/** The bets or debits a later win or credit case consumes, first placed first used. */
export class PlacedQueue {
  private readonly items: Placed[] = [];
  private cursor = 0;

  add(item: Placed): void {
    this.items.push(item);
  }

  take(): Placed | undefined {
    return this.items[this.cursor++];
  }

  get size(): number {
    return this.items.length - this.cursor;
  }

  /** A few, for sampling Redis memory per record. */
  sample(count: number): Placed[] {
    const step = Math.max(1, Math.floor(this.items.length / count));
    return this.items.filter((_, i) => i % step === 0).slice(0, count);
  }
}

/** An autocannon request whose setupRequest builds a fresh body each time; 200 bets go to `placed`. */
function dynamic(build: () => Built, placed?: PlacedQueue): autocannon.Request {
  return {
    method: 'POST',
    setupRequest: (req, context) => {
      const built = build();
      context.placed = built.placed;
      return { ...req, method: 'POST', path: built.path, body: built.body, headers: built.headers };
    },
    onResponse: (status, _body, context) => {
      const item = context.placed as Placed | undefined;
      if (placed !== undefined && item !== undefined && status === 200) placed.add(item);
    },
  };
}

export type DirectOp = 'balance' | 'debit' | 'credit';

/**
 * Case a: wallet balance, debit and credit straight at the simulator, signed. Connection i plays
 * player i; a credit takes the next debit placed by an earlier debit case (any player's).
 */
export function directRequests(op: DirectOp, ids: Ids, players: readonly WalletIdentity[], debits: PlacedQueue): (connection: number) => autocannon.Request {
  return (connection) => {
    const owner = connection % players.length;
    const player = players[owner] as WalletIdentity;
    const build = (): Built => {
      if (op === 'balance') {
        const body = `{${sessionJson(player)}}`;
        return { path: OPERATION_PATH.balance, body, headers: walletHeaders(body) };
      }
      if (op === 'debit') {
        const roundId = ids.next('r');
        const transactionId = ids.next('d');
        const body = `{${sessionJson(player)},"amount":${BET_AMOUNT},"round_id":"${roundId}","transaction_id":"${transactionId}","round_closed":false}`;
        return { path: OPERATION_PATH.debit, body, headers: walletHeaders(body), placed: { owner, roundId, transactionId } };
      }
      // With no debit left (only if the debit case placed fewer than asked) the credit refers to
      // a debit that does not exist and counts as an error.
      const debit = debits.take() ?? { owner, roundId: ids.next('r'), transactionId: ids.next('missing') };
      const body = `{${sessionJson(players[debit.owner] as WalletIdentity)},"amount":${WIN_AMOUNT},"round_id":"${debit.roundId}","transaction_id":"${ids.next('c')}","round_closed":true,"reference_transaction_id":"${debit.transactionId}"}`;
      return { path: OPERATION_PATH.credit, body, headers: walletHeaders(body) };
    };
    return dynamic(build, op === 'debit' ? debits : undefined);
  };
}

export type EngineOp = 'balance' | 'bet' | 'win';

/**
 * Cases b and c: engine calls as a game engine sends them. Connection i plays session i; a bet
 * opens a fresh round, a win closes the round of the next bet placed (round_closed defaults to true).
 */
export function engineRequests(op: EngineOp, ids: Ids, sessions: readonly string[], bets: PlacedQueue): (connection: number) => autocannon.Request {
  return (connection) => {
    const owner = connection % sessions.length;
    const session = sessions[owner] as string;
    const build = (): Built => {
      if (op === 'balance') return { path: `/engine/v1/sessions/${session}/balance`, body: '{}', headers: engineHeaders() };
      if (op === 'bet') {
        const roundId = ids.next('r');
        const transactionId = ids.next('b');
        const body = `{"round_id":"${roundId}","transaction_id":"${transactionId}","amount":${BET_AMOUNT}}`;
        return { path: `/engine/v1/sessions/${session}/bet`, body, headers: engineHeaders(), placed: { owner, roundId, transactionId } };
      }
      const bet = bets.take() ?? { owner, roundId: ids.next('r'), transactionId: ids.next('missing') };
      const body = `{"round_id":"${bet.roundId}","transaction_id":"${ids.next('w')}","bet_transaction_id":"${bet.transactionId}","amount":${WIN_AMOUNT}}`;
      return { path: `/engine/v1/sessions/${sessions[bet.owner] as string}/win`, body, headers: engineHeaders() };
    };
    return dynamic(build, op === 'bet' ? bets : undefined);
  };
}
