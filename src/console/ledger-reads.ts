import type { LedgerDb } from '../ledger/db';
import { listTransactions, transactionAudit, transactionHistory, type LedgerRecord, type LedgerTransaction } from '../ledger/history';
import type { StoredAuditEntry } from '../store/audit';
import type { WalletRecord } from './queries';

/**
 * What the console reads from the ledger (contract 12) for what Redis no longer holds: a record
 * past RECORD_RETENTION_SECONDS, a round or a player's history partly or wholly forgotten. Every
 * row says where it came from. A ledger that does not answer is an outcome, not an error: the
 * pages then show what Redis holds and say the ledger did not answer.
 */

/** Where a row shown came from. */
export type Source = 'redis' | 'ledger';

/** `none`: no ledger is kept (DATABASE_URL unset); `unavailable`: PostgreSQL did not answer. */
export type LedgerRead<T> = { readonly kind: 'none' } | { readonly kind: 'unavailable'; readonly error: Error } | { readonly kind: 'read'; readonly value: T };

/** Runs a ledger read; a failure is the `unavailable` outcome. */
export async function readLedger<T>(db: LedgerDb | undefined, read: (db: LedgerDb) => Promise<T>): Promise<LedgerRead<T>> {
  if (db === undefined) return { kind: 'none' };
  try {
    return { kind: 'read', value: await read(db) };
  } catch (err) {
    return { kind: 'unavailable', error: err as Error };
  }
}

/** The ledger's answer, or nothing when it gave none. */
export const ledgerValue = <T>(read: LedgerRead<T>, otherwise: T): T => (read.kind === 'read' ? read.value : otherwise);

/** The fields a record table shows of a row. */
export interface RowFields {
  readonly wallet: string;
  readonly transactionId: string;
  readonly kind: string;
  readonly state: string;
  readonly resolution: string | null;
  readonly amount: string;
  readonly currency: string;
  readonly playerId: string;
  readonly siteId: string;
  readonly roundId: string;
  readonly attempts: number;
  readonly createdAt: number;
}

/** A row of a record table, with where it came from and the record or ledger row it is. */
export type SourcedRow = RowFields & ({ readonly source: 'redis'; readonly origin: WalletRecord } | { readonly source: 'ledger'; readonly origin: LedgerTransaction });

export function redisRow(r: WalletRecord): SourcedRow {
  return {
    source: 'redis', origin: r, wallet: r.wallet, transactionId: r.transactionId, kind: r.kind, state: r.state, resolution: r.resolution, amount: r.amount, currency: r.currency,
    playerId: r.playerId, siteId: r.siteId, roundId: r.roundId, attempts: r.attempts, createdAt: r.createdAt,
  };
}

export function ledgerRow(t: LedgerTransaction): SourcedRow {
  return {
    source: 'ledger', origin: t, wallet: t.wallet, transactionId: t.transactionId, kind: t.kind, state: t.state, resolution: t.resolution, amount: t.amount, currency: t.currency,
    playerId: t.playerId, siteId: t.siteId, roundId: t.roundId, attempts: t.attempts, createdAt: t.createdAt,
  };
}

const rowKey = (r: { wallet: string; transactionId: string }): string => `${r.wallet}\u0000${r.transactionId}`;

/**
 * Redis's records (live state wins), then the ledger's rows of records Redis no longer holds,
 * oldest first. A ledger row whose id Redis holds again (a late repeat) is the older record: kept.
 */
export function mergeRows(redis: readonly WalletRecord[], ledger: readonly LedgerTransaction[]): SourcedRow[] {
  const held = new Map(redis.map((r) => [rowKey(r), r.createdAt]));
  const forgotten = ledger.filter((t) => held.get(rowKey(t)) !== t.createdAt);
  return [...redis.map(redisRow), ...forgotten.map(ledgerRow)].sort((a, b) => a.createdAt - b.createdAt);
}

/** A transaction the ledger holds in one wallet: its newest record and any earlier ones of the same id. */
export interface LedgerHeld {
  readonly wallet: string;
  readonly records: LedgerRecord[];
  /** The console's actions on it, oldest first (the audit trail's entries in the ledger). */
  readonly audit: StoredAuditEntry[];
}

/** The wallets whose ledger holds this transaction id, each with its records, newest first. */
export async function ledgerHolding(db: LedgerDb, wallets: readonly string[], transactionId: string): Promise<LedgerHeld[]> {
  const found = await Promise.all(wallets.map(async (wallet) => ({ wallet, records: await transactionHistory(db, wallet, transactionId) })));
  const held = found.filter((f) => f.records.length > 0);
  return Promise.all(held.map(async (f) => ({ ...f, audit: await transactionAudit(db, f.wallet, transactionId) })));
}

/** A player's newest rows (at most `limit`), in one wallet or every wallet. */
export async function ledgerPlayer(db: LedgerDb, wallet: string | undefined, playerId: string, siteId: string, limit: number): Promise<LedgerTransaction[]> {
  return (await listTransactions(db, { wallet, playerId, siteId }, undefined, limit)).transactions;
}

/** Rows grouped by (wallet, round), each round oldest first; rounds in the order their first row came. */
export function byRound(rows: readonly SourcedRow[]): { wallet: string; roundId: string; rows: SourcedRow[] }[] {
  const rounds = new Map<string, { wallet: string; roundId: string; rows: SourcedRow[] }>();
  for (const r of rows) {
    const key = `${r.wallet}\u0000${r.roundId}`;
    const round = rounds.get(key) ?? { wallet: r.wallet, roundId: r.roundId, rows: [] };
    round.rows.push(r);
    rounds.set(key, round);
  }
  return [...rounds.values()].map((r) => ({ ...r, rows: r.rows.sort((a, b) => a.createdAt - b.createdAt) }));
}
