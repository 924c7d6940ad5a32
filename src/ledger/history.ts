import type { LedgerDb } from './db';
import type { StoredAuditEntry } from '../store/audit';
import type { ChangeRow } from './rows';

/**
 * The ledger's reads (contract 12): the transactions list (filters, keyset pagination, newest
 * first), one transaction with every change, and a round's transactions. Amounts, balances and
 * ids come back as the text PostgreSQL holds (exact); times as epoch milliseconds.
 */

/** A change row as read back (the outbox entry it came from is not kept). */
export type LedgerTransaction = Omit<ChangeRow, 'outboxId'>;

export interface HistoryFilter {
  readonly wallet?: string;
  readonly playerId?: string;
  readonly siteId?: string;
  readonly roundId?: string;
  readonly state?: string;
  readonly kind?: string;
  /** Created at or after (ms). */
  readonly from?: number;
  /** Created at or before (ms). */
  readonly to?: number;
}

/** Where a page ends: the last row's (created at, wallet, transaction id). */
export interface HistoryCursor {
  readonly createdAt: number;
  readonly wallet: string;
  readonly transactionId: string;
}

export function encodeCursor(c: HistoryCursor): string {
  return Buffer.from(JSON.stringify([c.createdAt, c.wallet, c.transactionId]), 'utf8').toString('base64url');
}

/** undefined: not a cursor this API made. */
export function decodeCursor(text: string): HistoryCursor | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    if (!Array.isArray(value) || value.length !== 3) return undefined;
    const [createdAt, wallet, transactionId] = value as unknown[];
    if (!Number.isSafeInteger(createdAt) || typeof wallet !== 'string' || typeof transactionId !== 'string') return undefined;
    return { createdAt: createdAt as number, wallet, transactionId };
  } catch {
    return undefined;
  }
}

const SELECT = `SELECT wallet, transaction_id, change_no, (extract(epoch FROM created_at) * 1000)::bigint::text AS created_ms,
  (extract(epoch FROM changed_at) * 1000)::bigint::text AS changed_ms, kind, state, amount::text, currency, player_id::text, site_id::text,
  session_id, round_id, wallet_round_id, reference_id, is_compensation, compensation_id, attempts, last_wallet_code, wallet_request_id, engine_request_id, balance::text,
  error::text, resolution, note`;

interface Row {
  wallet: string;
  transaction_id: string;
  change_no: number;
  created_ms: string;
  changed_ms: string;
  kind: string;
  state: string;
  amount: string;
  currency: string;
  player_id: string;
  site_id: string;
  session_id: string;
  round_id: string;
  wallet_round_id: string;
  reference_id: string | null;
  is_compensation: boolean;
  compensation_id: string | null;
  attempts: number;
  last_wallet_code: number | null;
  wallet_request_id: string | null;
  engine_request_id: string | null;
  balance: string | null;
  error: string | null;
  resolution: string | null;
  note: string | null;
}

function fromRow(r: Row): LedgerTransaction {
  return {
    wallet: r.wallet,
    transactionId: r.transaction_id,
    changeNo: r.change_no,
    createdAt: Number(r.created_ms),
    changedAt: Number(r.changed_ms),
    kind: r.kind,
    state: r.state,
    amount: r.amount,
    currency: r.currency,
    playerId: r.player_id,
    siteId: r.site_id,
    sessionId: r.session_id,
    roundId: r.round_id,
    walletRoundId: r.wallet_round_id,
    referenceId: r.reference_id,
    isCompensation: r.is_compensation,
    compensationId: r.compensation_id,
    attempts: r.attempts,
    lastWalletCode: r.last_wallet_code,
    walletRequestId: r.wallet_request_id,
    engineRequestId: r.engine_request_id,
    balance: r.balance,
    error: r.error,
    resolution: r.resolution,
    note: r.note,
  };
}

const ms = (param: string): string => `to_timestamp(${param}::numeric / 1000)`;

export interface HistoryPage {
  readonly transactions: LedgerTransaction[];
  /** The next page's cursor; null on the last page. */
  readonly next: HistoryCursor | null;
}

export async function listTransactions(db: LedgerDb, filter: HistoryFilter, cursor: HistoryCursor | undefined, limit: number): Promise<HistoryPage> {
  const where: string[] = [];
  const values: unknown[] = [];
  const param = (value: unknown): string => {
    values.push(value);
    return `$${values.length}`;
  };
  if (filter.wallet !== undefined) where.push(`wallet = ${param(filter.wallet)}`);
  if (filter.playerId !== undefined) where.push(`player_id = ${param(filter.playerId)}::numeric`);
  if (filter.siteId !== undefined) where.push(`site_id = ${param(filter.siteId)}::numeric`);
  if (filter.roundId !== undefined) where.push(`round_id = ${param(filter.roundId)}`);
  if (filter.state !== undefined) where.push(`state = ${param(filter.state)}`);
  if (filter.kind !== undefined) where.push(`kind = ${param(filter.kind)}`);
  if (filter.from !== undefined) where.push(`created_at >= ${ms(param(filter.from))}`);
  if (filter.to !== undefined) where.push(`created_at <= ${ms(param(filter.to))}`);
  if (cursor !== undefined) {
    where.push(`(created_at, wallet, transaction_id) < (${ms(param(cursor.createdAt))}, ${param(cursor.wallet)}, ${param(cursor.transactionId)})`);
  }
  const { rows } = await db.query<Row>(
    `${SELECT} FROM ledger_transactions ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
      ORDER BY created_at DESC, wallet DESC, transaction_id DESC LIMIT ${param(limit + 1)}`,
    values,
  );
  const page = rows.slice(0, limit).map(fromRow);
  const last = page.at(-1);
  return { transactions: page, next: rows.length > limit && last !== undefined ? { createdAt: last.createdAt, wallet: last.wallet, transactionId: last.transactionId } : null };
}

export interface LedgerRecord {
  /** The record as its newest change left it. */
  readonly transaction: LedgerTransaction;
  /** Every change, oldest first. */
  readonly changes: LedgerTransaction[];
}

/**
 * Every record the wallet held under this id, newest first: more than one when the engine
 * repeated the id after Redis had forgotten the first (a late repeat).
 */
export async function transactionHistory(db: LedgerDb, wallet: string, transactionId: string): Promise<LedgerRecord[]> {
  const { rows } = await db.query<Row>(
    `${SELECT} FROM ledger_changes WHERE wallet = $1 AND transaction_id = $2 ORDER BY created_at DESC, change_no ASC`,
    [wallet, transactionId],
  );
  const records = new Map<number, LedgerTransaction[]>();
  for (const row of rows.map(fromRow)) records.set(row.createdAt, [...(records.get(row.createdAt) ?? []), row]);
  return [...records.values()].map((changes) => ({ transaction: changes.at(-1)!, changes }));
}

/** The console's audit entries of one transaction in the wallet's ledger, oldest first. */
export async function transactionAudit(db: LedgerDb, wallet: string, transactionId: string): Promise<StoredAuditEntry[]> {
  const { rows } = await db.query<Record<'entry_id' | 'at' | 'operator' | 'action' | 'transaction_id' | 'target_id' | 'state_before' | 'state_after' | 'result' | 'note' | 'request_id', string>>(
    `SELECT entry_id, (extract(epoch FROM at) * 1000)::bigint::text AS at, operator, action, transaction_id, target_id, state_before, state_after, result, note, request_id
       FROM ledger_audit WHERE wallet = $1 AND transaction_id = $2 ORDER BY at ASC, entry_id ASC`,
    [wallet, transactionId],
  );
  return rows.map((r) => ({
    id: r.entry_id, at: Number(r.at), user: r.operator, action: r.action, transactionId: r.transaction_id, targetId: r.target_id,
    stateBefore: r.state_before, stateAfter: r.state_after, result: r.result, note: r.note, requestId: r.request_id,
  }));
}

export interface LateRepeat {
  readonly wallet: string;
  readonly transactionId: string;
  readonly createdAt: number;
  readonly earlierCreatedAt: number;
  readonly flaggedAt: number;
}

/** Transaction ids the engine used again after Redis had forgotten them, newest first. */
export async function lateRepeats(db: LedgerDb, wallet: string | undefined, limit: number): Promise<LateRepeat[]> {
  const { rows } = await db.query<{ wallet: string; transaction_id: string; c: string; e: string; f: string }>(
    `SELECT wallet, transaction_id, (extract(epoch FROM created_at) * 1000)::bigint::text AS c,
            (extract(epoch FROM earlier_created_at) * 1000)::bigint::text AS e, (extract(epoch FROM flagged_at) * 1000)::bigint::text AS f
       FROM ledger_late_repeats WHERE $1::text IS NULL OR wallet = $1 ORDER BY created_at DESC LIMIT $2`,
    [wallet ?? null, limit],
  );
  return rows.map((r) => ({ wallet: r.wallet, transactionId: r.transaction_id, createdAt: Number(r.c), earlierCreatedAt: Number(r.e), flaggedAt: Number(r.f) }));
}

/** A round's transactions in the order they were made. */
export async function roundHistory(db: LedgerDb, wallet: string, roundId: string): Promise<LedgerTransaction[]> {
  const { rows } = await db.query<Row>(`${SELECT} FROM ledger_transactions WHERE wallet = $1 AND round_id = $2 ORDER BY created_at ASC, transaction_id ASC`, [wallet, roundId]);
  return rows.map(fromRow);
}

/**
 * Every row of a table, with the outbox entry each came from: the soak's comparison of the ledger
 * with Redis after a run (a test database's size, never a production one's).
 */
export async function everyRow(db: LedgerDb, table: 'ledger_changes' | 'ledger_transactions'): Promise<ChangeRow[]> {
  const { rows } = await db.query<Row & { outbox_id: string }>(`${SELECT}, outbox_id FROM ${table}`);
  return rows.map((r) => ({ ...fromRow(r), outboxId: r.outbox_id }));
}
