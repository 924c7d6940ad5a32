import type { LedgerDb } from './db';

/**
 * Monthly partitions (UTC months) of the ledger's tables: made before rows of a month are written,
 * dropped whole once the month ended more than LEDGER_RETENTION_DAYS ago (never row by row).
 */
export const PARTITIONED_TABLES = ['ledger_changes', 'ledger_transactions', 'ledger_late_repeats', 'ledger_audit'] as const;

const SUFFIX = /_y(\d{4})m(\d{2})$/;
const DAY_MS = 86_400_000;

/** The first millisecond (UTC) of the month holding `at`. */
export function monthStart(at: number): number {
  const d = new Date(at);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

function nextMonth(start: number): number {
  const d = new Date(start);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

export function partitionName(table: string, start: number): string {
  const d = new Date(start);
  return `${table}_y${d.getUTCFullYear()}m${String(d.getUTCMonth() + 1).padStart(2, '0')}`;
}

/** The first month still kept at `now`: a month that ended at or before now − retention is dropped. */
export function oldestKeptMonth(now: number, retentionDays: number): number {
  const cutoff = now - retentionDays * DAY_MS;
  // The month holding the cutoff still has rows younger than it.
  return monthStart(cutoff);
}

/** Makes the months' partitions of every table (each idempotent). */
export async function ensureMonths(db: LedgerDb, months: Iterable<number>): Promise<void> {
  for (const start of new Set([...months].map(monthStart))) {
    const from = new Date(start).toISOString();
    const to = new Date(nextMonth(start)).toISOString();
    for (const table of PARTITIONED_TABLES) {
      await db.query(`CREATE TABLE IF NOT EXISTS ${partitionName(table, start)} PARTITION OF ${table} FOR VALUES FROM ('${from}') TO ('${to}')`);
    }
  }
}

/** The partitions that exist, per month start. */
export async function listMonths(db: LedgerDb): Promise<Map<number, string[]>> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
      WHERE p.relname = ANY($1::text[])`,
    [PARTITIONED_TABLES],
  );
  const months = new Map<number, string[]>();
  for (const { name } of rows) {
    const m = SUFFIX.exec(name);
    if (m === null) continue;
    const start = Date.UTC(Number(m[1]), Number(m[2]) - 1, 1);
    months.set(start, [...(months.get(start) ?? []), name]);
  }
  return months;
}

/** Drops every partition of a month older than the retention; returns the names dropped. */
export async function dropExpiredMonths(db: LedgerDb, now: number, retentionDays: number): Promise<string[]> {
  const keepFrom = oldestKeptMonth(now, retentionDays);
  const dropped: string[] = [];
  for (const [start, names] of await listMonths(db)) {
    if (start >= keepFrom) continue;
    for (const name of names) {
      await db.query(`DROP TABLE IF EXISTS ${name}`);
      dropped.push(name);
    }
  }
  return dropped.sort();
}
