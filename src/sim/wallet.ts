import { Code } from '../wallet/codes';
import type { CreditFields, DebitFields, Operation, RequestFields, SessionFields, StatusFields, TransactionAction } from '../wallet/protocol';
import { fromMinor, toMinor } from '../lib/money';

/**
 * The simulated wallet's state and rules: players' balances (one wallet per player and currency,
 * as a multi-currency casino keeps them), tokens, rounds and applied transactions. Pure in-memory bookkeeping with no I/O, so every call is applied atomically
 * (Node runs one handler at a time). The rules the spec leaves open are written down in
 * docs/simulator.md.
 */
export type TransactionStatus = 'applied' | 'rolled_back';

export type WalletResult =
  | {
      readonly ok: true;
      readonly balance: string;
      /** true when this call changed money (false for idempotent repeats and reads). */
      readonly changed: boolean;
      readonly transactionStatus?: TransactionStatus;
    }
  | { readonly ok: false; readonly code: number; readonly message: string };

export interface PlayerView {
  readonly playerId: string;
  readonly currency: string;
  readonly balance: string;
}

export interface TransactionView {
  readonly transactionId: string;
  readonly op: TransactionAction;
  readonly playerId: string;
  readonly roundId: string;
  readonly amount: string;
  readonly referenceTransactionId: string | undefined;
  readonly roundClosed: boolean;
  /** Accepted by the wallet (every recorded transaction is). */
  readonly applied: boolean;
  /** A debit reversed by a rollback. */
  readonly rolledBack: boolean;
  /** The rollback transaction that reversed this debit. */
  readonly rolledBackBy: string | undefined;
  /** How many times this transaction changed money; a correct caller keeps it ≤ 1. */
  readonly timesApplied: number;
  /** Epoch milliseconds of acceptance. */
  readonly at: number;
}

/** Read-only view of the wallet's books for tests and the admin API. */
export interface Ledger {
  /**
   * The player's balance as decimal text in `currency` (without it: in the currency of the
   * player's first wallet), or undefined for a player never authenticated in it.
   */
  balanceOf(playerId: string, currency?: string): string | undefined;
  transaction(transactionId: string): TransactionView | undefined;
  appliedCount(transactionId: string): number;
  players(): readonly PlayerView[];
  transactions(): readonly TransactionView[];
}

interface Player {
  readonly playerId: string;
  readonly currency: string;
  readonly scale: number;
  balance: bigint;
}

interface Token {
  readonly playerId: string;
  readonly siteId: string;
  readonly currency: string;
  terminated: boolean;
}

interface Round {
  debitId: string | undefined;
  closed: boolean;
}

interface Transaction {
  readonly transactionId: string;
  readonly op: TransactionAction;
  readonly playerId: string;
  readonly currency: string;
  readonly roundId: string;
  readonly amountMinor: bigint;
  readonly referenceTransactionId: string | undefined;
  readonly roundClosed: boolean;
  /** Every request field but the token, amounts normalised: a retry may come with a newer token. */
  readonly fingerprint: string;
  timesApplied: number;
  rolledBackBy: string | undefined;
  readonly at: number;
}

export interface WalletOptions {
  startBalance: string;
  currencyDigits: Readonly<Record<string, number>>;
}

const DEFAULT_DIGITS = 2;

function refuse(code: number, message: string): WalletResult {
  return { ok: false, code, message };
}

/** Minor units of `amount` at `scale`, accepting trailing zeros beyond it ("10.500" at 2); undefined if finer. */
export function minorAt(amount: string, scale: number): bigint | undefined {
  const trimmed = amount.includes('.') ? amount.replace(/0+$/, '').replace(/\.$/, '') : amount;
  try {
    return toMinor(trimmed, scale);
  } catch {
    return undefined;
  }
}

/** A player's wallet in one currency. */
const walletKey = (playerId: string, currency: string): string => `${playerId}\u0000${currency}`;

export class SimWallet implements Ledger {
  /** Wallets by player and currency (walletKey), in the order they were opened. */
  private readonly wallets = new Map<string, Player>();
  /** The currency of each player's first wallet. */
  private readonly firstCurrency = new Map<string, string>();
  private readonly tokens = new Map<string, Token>();
  private readonly rounds = new Map<string, Round>();
  private readonly txs = new Map<string, Transaction>();

  constructor(private readonly options: WalletOptions) {}

  handle<Op extends Operation>(op: Op, fields: RequestFields[Op]): WalletResult {
    switch (op) {
      case 'authenticate':
        return this.authenticate(fields as SessionFields);
      case 'balance':
        return this.withSession(fields as SessionFields, (player) => this.ok(player, false));
      case 'terminate':
        return this.withSession(fields as SessionFields, (player) => {
          (this.tokens.get(fields.token) as Token).terminated = true;
          return this.ok(player, false);
        });
      case 'debit':
        return this.withSession(fields as DebitFields, (player) => this.debit(player, fields as DebitFields));
      case 'credit':
        return this.withSession(fields as CreditFields, (player) => this.credit(player, fields as CreditFields));
      case 'rollback':
        return this.withSession(fields as CreditFields, (player) => this.rollback(player, fields as CreditFields));
      case 'status':
        return this.withSession(fields as StatusFields, (player) => this.status(player, fields as StatusFields));
    }
  }

  // --- Ledger -------------------------------------------------------------------------------

  balanceOf(playerId: string, currency?: string): string | undefined {
    const inCurrency = currency ?? this.firstCurrency.get(playerId);
    const player = inCurrency === undefined ? undefined : this.wallets.get(walletKey(playerId, inCurrency));
    return player && fromMinor(player.balance, player.scale);
  }

  transaction(transactionId: string): TransactionView | undefined {
    const tx = this.txs.get(transactionId);
    return tx && this.view(tx);
  }

  appliedCount(transactionId: string): number {
    return this.txs.get(transactionId)?.timesApplied ?? 0;
  }

  players(): readonly PlayerView[] {
    return [...this.wallets.values()].map((p) => ({ playerId: p.playerId, currency: p.currency, balance: fromMinor(p.balance, p.scale) }));
  }

  transactions(): readonly TransactionView[] {
    return [...this.txs.values()].map((tx) => this.view(tx));
  }

  // --- operations ---------------------------------------------------------------------------

  private authenticate(fields: SessionFields): WalletResult {
    const token = this.tokens.get(fields.token);
    if (token) return this.withSession(fields, (player) => this.ok(player, false));
    // A token never seen counts as issued for the player, site and currency of its first
    // authenticate; a player's first token in a currency opens their wallet in it.
    const player = this.wallets.get(walletKey(fields.player_id, fields.currency)) ?? this.newPlayer(fields.player_id, fields.currency);
    this.tokens.set(fields.token, { playerId: fields.player_id, siteId: fields.site_id, currency: fields.currency, terminated: false });
    return this.ok(player, false);
  }

  private debit(player: Player, fields: DebitFields): WalletResult {
    const amount = this.amountOf(player, fields.amount);
    if (typeof amount !== 'bigint') return amount;
    const repeat = this.repeat(player, 'debit', fields, amount);
    if (repeat) return repeat;
    const round = this.round(player, fields.round_id);
    if (round.closed) return refuse(Code.RoundClosed, `round ${fields.round_id} is closed`);
    if (round.debitId !== undefined) return refuse(Code.RoundHasDebit, `round ${fields.round_id} already has debit ${round.debitId}`);
    if (player.balance < amount) return refuse(Code.InsufficientFunds, 'insufficient funds');
    player.balance -= amount;
    round.debitId = fields.transaction_id;
    return this.record(player, 'debit', fields, amount, round);
  }

  private credit(player: Player, fields: CreditFields): WalletResult {
    const amount = this.amountOf(player, fields.amount);
    if (typeof amount !== 'bigint') return amount;
    const repeat = this.repeat(player, 'credit', fields, amount);
    if (repeat) return repeat;
    const round = this.round(player, fields.round_id);
    if (round.closed) return refuse(Code.RoundClosed, `round ${fields.round_id} is closed`);
    const debit = this.debitInRound(player, fields.round_id, fields.reference_transaction_id);
    if (!debit || debit.rolledBackBy !== undefined) {
      return refuse(Code.BetTransactionNotFoundInRound, `no debit ${fields.reference_transaction_id} in round ${fields.round_id}`);
    }
    player.balance += amount;
    return this.record(player, 'credit', fields, amount, round);
  }

  private rollback(player: Player, fields: CreditFields): WalletResult {
    const amount = this.amountOf(player, fields.amount);
    if (typeof amount !== 'bigint') return amount;
    const repeat = this.repeat(player, 'rollback', fields, amount);
    if (repeat) return repeat;
    const round = this.round(player, fields.round_id);
    const debit = this.debitInRound(player, fields.round_id, fields.reference_transaction_id);
    if (debit && debit.amountMinor !== amount) {
      return refuse(Code.AmountMismatch, `amount ${fields.amount} differs from debit ${debit.transactionId}`);
    }
    // Already reversed (by another rollback id): the reversal holds, so this one succeeds without effect.
    if (debit && debit.rolledBackBy !== undefined) {
      if (fields.round_closed) round.closed = true;
      return this.ok(player, false);
    }
    if (round.closed) return refuse(Code.RoundClosed, `round ${fields.round_id} is closed`);
    if (!debit) return refuse(Code.TransactionNotFound, `no debit ${fields.reference_transaction_id} in round ${fields.round_id}`);
    player.balance += amount;
    debit.rolledBackBy = fields.transaction_id;
    return this.record(player, 'rollback', fields, amount, round);
  }

  private status(player: Player, fields: StatusFields): WalletResult {
    const tx = this.txs.get(fields.transaction_id);
    if (!tx || tx.op !== fields.action || tx.playerId !== player.playerId || tx.currency !== player.currency) {
      return refuse(Code.TransactionNotFound, `no ${fields.action} ${fields.transaction_id} was applied`);
    }
    const amount = minorAt(fields.amount, player.scale);
    if (tx.roundId !== fields.round_id || amount !== tx.amountMinor) {
      return refuse(Code.TransactionConflict, `${fields.action} ${fields.transaction_id} was applied with another round_id or amount`);
    }
    const transactionStatus = tx.rolledBackBy === undefined ? 'applied' : 'rolled_back';
    return { ok: true, balance: fromMinor(player.balance, player.scale), changed: false, transactionStatus };
  }

  // --- helpers ------------------------------------------------------------------------------

  /** Token rules shared by every operation; runs `then` with the token's player. */
  private withSession(fields: SessionFields, then: (player: Player) => WalletResult): WalletResult {
    const token = this.tokens.get(fields.token);
    if (!token) return refuse(Code.InvalidToken, 'token not authenticated');
    if (token.terminated) return refuse(Code.TokenDeactivated, 'token terminated');
    if (token.playerId !== fields.player_id || token.siteId !== fields.site_id || token.currency !== fields.currency) {
      return refuse(Code.InvalidToken, 'token was issued for another player, site or currency');
    }
    return then(this.wallets.get(walletKey(token.playerId, token.currency)) as Player);
  }

  private newPlayer(playerId: string, currency: string): Player {
    const scale = this.options.currencyDigits[currency] ?? DEFAULT_DIGITS;
    const balance = minorAt(this.options.startBalance, scale);
    if (balance === undefined) throw new RangeError(`start balance ${this.options.startBalance} does not fit ${currency}`);
    const player = { playerId, currency, scale, balance };
    this.wallets.set(walletKey(playerId, currency), player);
    if (!this.firstCurrency.has(playerId)) this.firstCurrency.set(playerId, currency);
    return player;
  }

  private amountOf(player: Player, amount: string): bigint | WalletResult {
    const minor = minorAt(amount, player.scale);
    if (minor === undefined) return refuse(Code.Validation, `amount: more than ${player.scale} fraction digits for ${player.currency}`);
    return minor;
  }

  /** A known transaction_id: the original success when every field matches, else a conflict. */
  private repeat(player: Player, op: TransactionAction, fields: DebitFields | CreditFields, amount: bigint): WalletResult | undefined {
    const tx = this.txs.get(fields.transaction_id);
    if (!tx) return undefined;
    if (tx.fingerprint !== fingerprint(op, fields, amount)) {
      return refuse(Code.TransactionConflict, `transaction_id ${fields.transaction_id} was used with other fields`);
    }
    return this.ok(player, false);
  }

  private round(player: Player, roundId: string): Round {
    const key = `${walletKey(player.playerId, player.currency)}\u0000${roundId}`;
    let round = this.rounds.get(key);
    if (!round) {
      round = { debitId: undefined, closed: false };
      this.rounds.set(key, round);
    }
    return round;
  }

  private debitInRound(player: Player, roundId: string, debitId: string): Transaction | undefined {
    const tx = this.txs.get(debitId);
    return tx && tx.op === 'debit' && tx.playerId === player.playerId && tx.currency === player.currency && tx.roundId === roundId ? tx : undefined;
  }

  private record(player: Player, op: TransactionAction, fields: DebitFields | CreditFields, amount: bigint, round: Round): WalletResult {
    this.txs.set(fields.transaction_id, {
      transactionId: fields.transaction_id,
      op,
      playerId: player.playerId,
      currency: player.currency,
      roundId: fields.round_id,
      amountMinor: amount,
      referenceTransactionId: 'reference_transaction_id' in fields ? fields.reference_transaction_id : undefined,
      roundClosed: fields.round_closed,
      fingerprint: fingerprint(op, fields, amount),
      timesApplied: 1,
      rolledBackBy: undefined,
      at: Date.now(),
    });
    if (fields.round_closed) round.closed = true;
    return this.ok(player, true);
  }

  private ok(player: Player, changed: boolean): WalletResult {
    return { ok: true, balance: fromMinor(player.balance, player.scale), changed };
  }

  private view(tx: Transaction): TransactionView {
    const scale = this.wallets.get(walletKey(tx.playerId, tx.currency))?.scale ?? DEFAULT_DIGITS;
    return {
      transactionId: tx.transactionId,
      op: tx.op,
      playerId: tx.playerId,
      roundId: tx.roundId,
      amount: fromMinor(tx.amountMinor, scale),
      referenceTransactionId: tx.referenceTransactionId,
      roundClosed: tx.roundClosed,
      applied: true,
      rolledBack: tx.rolledBackBy !== undefined,
      rolledBackBy: tx.rolledBackBy,
      timesApplied: tx.timesApplied,
      at: tx.at,
    };
  }
}

function fingerprint(op: TransactionAction, fields: DebitFields | CreditFields, amount: bigint): string {
  const reference = 'reference_transaction_id' in fields ? fields.reference_transaction_id : '';
  return JSON.stringify([
    op,
    fields.player_id,
    fields.site_id,
    fields.provider_id,
    fields.game_id,
    fields.currency,
    amount.toString(),
    fields.round_id,
    reference,
    fields.round_closed,
  ]);
}
