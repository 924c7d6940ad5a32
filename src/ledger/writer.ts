import type { PoolClient } from 'pg';
import type { LedgerDb } from './db';
import { ensureMonths, monthStart } from './partitions';
import type { AuditRow, ChangeRow } from './rows';

/**
 * Writes a batch of outbox rows in one transaction. Idempotent: a change is named by (wallet,
 * transaction id, the record's creation time, change number) and written once however often its
 * entry is replayed (a worker killed between the commit and its XACK); the newest-change table
 * only ever moves to a higher change number. Rows of months already past the retention are left
 * out (their partitions are gone, and would be made again).
 */

const CHANGE_COLUMNS = [
  'wallet', 'transaction_id', 'change_no', 'created_at', 'changed_at', 'kind', 'state', 'amount', 'currency', 'player_id', 'site_id',
  'session_id', 'round_id', 'wallet_round_id', 'reference_id', 'is_compensation', 'compensation_id', 'attempts', 'last_wallet_code', 'wallet_request_id',
  'engine_request_id', 'balance', 'error', 'resolution', 'note', 'outbox_id',
] as const;
/** How each value is cast: ms → timestamptz, ids and amounts from text. */
const CHANGE_CASTS: Record<(typeof CHANGE_COLUMNS)[number], string> = {
  wallet: 'text', transaction_id: 'text', change_no: 'integer', created_at: 'ms', changed_at: 'ms', kind: 'text', state: 'text',
  amount: 'numeric', currency: 'text', player_id: 'numeric(20,0)', site_id: 'numeric(20,0)', session_id: 'text', round_id: 'text',
  wallet_round_id: 'text', reference_id: 'text', is_compensation: 'boolean', compensation_id: 'text', attempts: 'integer', last_wallet_code: 'integer',
  wallet_request_id: 'text', engine_request_id: 'text', balance: 'numeric', error: 'jsonb', resolution: 'text', note: 'text', outbox_id: 'text',
};

function changeValues(r: ChangeRow): unknown[] {
  return [
    r.wallet, r.transactionId, r.changeNo, r.createdAt, r.changedAt, r.kind, r.state, r.amount, r.currency, r.playerId, r.siteId,
    r.sessionId, r.roundId, r.walletRoundId, r.referenceId, r.isCompensation, r.compensationId, r.attempts, r.lastWalletCode, r.walletRequestId,
    r.engineRequestId, r.balance, r.error, r.resolution, r.note, r.outboxId,
  ];
}

const AUDIT_COLUMNS = ['wallet', 'entry_id', 'at', 'operator', 'action', 'transaction_id', 'target_id', 'state_before', 'state_after', 'result', 'note', 'request_id'] as const;

function auditValues(r: AuditRow): unknown[] {
  return [r.wallet, r.entryId, r.at, r.user, r.action, r.transactionId, r.targetId, r.stateBefore, r.stateAfter, r.result, r.note, r.requestId];
}

const cast = (param: string, type: string): string => (type === 'ms' ? `to_timestamp(${param}::numeric / 1000)` : `${param}::${type}`);

/** `INSERT … VALUES (…), (…)` with one placeholder per value, cast per column. */
function insertSql(table: string, columns: readonly string[], casts: readonly string[], rows: readonly unknown[][]): { text: string; values: unknown[] } {
  const values: unknown[] = [];
  const tuples = rows.map((row) => `(${row.map((v, i) => {
    values.push(v);
    return cast(`$${values.length}`, casts[i]!);
  }).join(', ')})`);
  return { text: `INSERT INTO ${table} (${columns.join(', ')}) VALUES ${tuples.join(', ')}`, values };
}

const CHANGE_CAST_LIST = CHANGE_COLUMNS.map((c) => CHANGE_CASTS[c]);
const AUDIT_CAST_LIST = AUDIT_COLUMNS.map((c) => (c === 'at' ? 'ms' : 'text'));
const UPDATE_NEWEST = CHANGE_COLUMNS.filter((c) => !['wallet', 'transaction_id', 'created_at'].includes(c)).map((c) => `${c} = EXCLUDED.${c}`).join(', ');

/** A record's name in the ledger: an id the engine repeats late makes another record. */
const recordKey = (r: Pick<ChangeRow, 'wallet' | 'transactionId' | 'createdAt'>): string => `${r.wallet}\u0000${r.transactionId}\u0000${r.createdAt}`;

/** The newest change of each record in the batch. */
function newestOf(rows: readonly ChangeRow[]): ChangeRow[] {
  const newest = new Map<string, ChangeRow>();
  for (const r of rows) {
    const key = recordKey(r);
    const seen = newest.get(key);
    if (seen === undefined || seen.changeNo < r.changeNo) newest.set(key, r);
  }
  return [...newest.values()];
}

/**
 * Only a record's claim carries the engine's request id (the outbox entry of the engine call that
 * made it): every later change (a worker's retry, an operator's action) gets its record's, from
 * the batch or from the ledger's row of the record, so every row names the engine call.
 */
async function withEngineRequestIds(client: PoolClient, rows: readonly ChangeRow[]): Promise<ChangeRow[]> {
  const known = new Map<string, string>();
  for (const r of rows) if (r.engineRequestId !== null) known.set(recordKey(r), r.engineRequestId);
  const missing = [...new Map(rows.filter((r) => r.engineRequestId === null && !known.has(recordKey(r))).map((r) => [recordKey(r), r])).values()];
  if (missing.length > 0) {
    const { rows: found } = await client.query<{ wallet: string; transaction_id: string; created_ms: string; engine_request_id: string }>(
      `SELECT t.wallet, t.transaction_id, n.created_ms::text AS created_ms, t.engine_request_id
         FROM unnest($1::text[], $2::text[], $3::numeric[]) AS n(wallet, transaction_id, created_ms)
         JOIN ledger_transactions t ON t.wallet = n.wallet AND t.transaction_id = n.transaction_id AND t.created_at = to_timestamp(n.created_ms / 1000)
        WHERE t.engine_request_id IS NOT NULL`,
      [missing.map((r) => r.wallet), missing.map((r) => r.transactionId), missing.map((r) => String(r.createdAt))],
    );
    for (const f of found) known.set(recordKey({ wallet: f.wallet, transactionId: f.transaction_id, createdAt: Number(f.created_ms) }), f.engine_request_id);
  }
  return rows.map((r) => (r.engineRequestId !== null || !known.has(recordKey(r)) ? r : { ...r, engineRequestId: known.get(recordKey(r))! }));
}

/** Rows at most this many to one statement (26 parameters each, well under PostgreSQL's 65535). */
const ROWS_PER_STATEMENT = 500;

function chunks<T>(list: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += ROWS_PER_STATEMENT) out.push(list.slice(i, i + ROWS_PER_STATEMENT));
  return out;
}

export interface WriteResult {
  /** Changes and audit entries newly written (a replay's rows count 0). */
  readonly written: number;
  /** Rows older than the retention, left out. */
  readonly expired: number;
}

/** `months`: the month partitions this writer made or found already (asked for once each). */
export async function writeBatch(db: LedgerDb, changes: readonly ChangeRow[], audits: readonly AuditRow[], keepFrom: number, months: Set<number>): Promise<WriteResult> {
  const keptChanges = changes.filter((r) => r.createdAt >= keepFrom);
  const keptAudits = audits.filter((r) => r.at >= keepFrom);
  const expired = changes.length - keptChanges.length + audits.length - keptAudits.length;
  if (keptChanges.length + keptAudits.length === 0) return { written: 0, expired };
  const newMonths = [...new Set([...keptChanges.map((r) => monthStart(r.createdAt)), ...keptAudits.map((r) => monthStart(r.at))])].filter((m) => !months.has(m));
  await ensureMonths(db, newMonths);
  for (const m of newMonths) months.add(m);
  const client: PoolClient = await db.connect();
  let written = 0;
  let failed: Error | undefined;
  try {
    await client.query('BEGIN');
    const rows = await withEngineRequestIds(client, keptChanges);
    for (const part of chunks(rows)) {
      const insert = insertSql('ledger_changes', CHANGE_COLUMNS, CHANGE_CAST_LIST, part.map(changeValues));
      written += (await client.query(`${insert.text} ON CONFLICT DO NOTHING`, insert.values)).rowCount ?? 0;
    }
    // A record's first change while the wallet's ledger holds an older record of the same id: a late repeat.
    const firsts = rows.filter((r) => r.changeNo === 1);
    if (firsts.length > 0) {
      await client.query(
        `INSERT INTO ledger_late_repeats (wallet, transaction_id, created_at, earlier_created_at)
           SELECT n.wallet, n.transaction_id, to_timestamp(n.created_ms / 1000), max(o.created_at)
             FROM unnest($1::text[], $2::text[], $3::numeric[]) AS n(wallet, transaction_id, created_ms)
             JOIN ledger_changes o ON o.wallet = n.wallet AND o.transaction_id = n.transaction_id AND o.created_at < to_timestamp(n.created_ms / 1000)
            GROUP BY n.wallet, n.transaction_id, n.created_ms
         ON CONFLICT DO NOTHING`,
        [firsts.map((r) => r.wallet), firsts.map((r) => r.transactionId), firsts.map((r) => String(r.createdAt))],
      );
    }
    for (const part of chunks(newestOf(rows))) {
      const upsert = insertSql('ledger_transactions', CHANGE_COLUMNS, CHANGE_CAST_LIST, part.map(changeValues));
      await client.query(
        `${upsert.text} ON CONFLICT (wallet, transaction_id, created_at) DO UPDATE SET ${UPDATE_NEWEST} WHERE ledger_transactions.change_no < EXCLUDED.change_no`,
        upsert.values,
      );
    }
    for (const part of chunks(keptAudits)) {
      const insert = insertSql('ledger_audit', AUDIT_COLUMNS, AUDIT_CAST_LIST, part.map(auditValues));
      written += (await client.query(`${insert.text} ON CONFLICT DO NOTHING`, insert.values)).rowCount ?? 0;
    }
    await client.query('COMMIT');
  } catch (err) {
    failed = err as Error;
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    // A connection that failed mid-transaction is closed, not handed out again.
    client.release(failed);
  }
  return { written, expired };
}
