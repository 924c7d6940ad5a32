import { setTimeout as sleep } from 'node:timers/promises';
import type { RedisClient } from '../store/redis';
import { statusFieldsOf } from '../duties/status-check';
import type { ShardLayout } from '../store/shards';
import { recordsCreatedIn } from '../store/record-scan';
import type { SessionStore } from '../store/sessions';
import type { TransactionRecord } from '../store/types';
import type { WalletClient } from '../wallet/protocol';
import type { LedgerDb } from '../ledger/db';
import { listTransactions, type HistoryCursor, type LedgerTransaction } from '../ledger/history';

/**
 * The reconciliation export: every transaction created in a time window (optionally one player's
 * or one site's), as the gateway holds it, to diff against each wallet's ledger. Wallets are
 * separate worlds (contract 11): each row names its wallet, and the wallets asked about come one
 * after the other in the registry's order, each oldest first. Streamed: records are read from a
 * wallet's time index a page at a time and written out as they come. Amounts are the exact decimal
 * text the engine sent. With `withStatus`, each record is asked about with a fresh `status` at its
 * own wallet, at most `statusPerSecond` calls a second in all. With `source: 'ledger'` the rows
 * come from the ledger instead (contract 12: history past Redis's retention), each wallet's
 * newest first, each record in its newest state; no `status` column then.
 */
export interface ExportWallet {
  readonly id: string;
  readonly redis: RedisClient;
  readonly layout: ShardLayout;
  readonly sessions: Pick<SessionStore, 'profile'>;
  readonly wallet: WalletClient;
  readonly providerId: string;
}

export interface ExportDeps {
  /** The wallets exported (the `wallet` filter: one, or all of the registry's). */
  readonly wallets: readonly ExportWallet[];
  readonly statusPerSecond: number;
  /** The ledger (`source: 'ledger'`); undefined: none is kept. */
  readonly ledgerDb?: LedgerDb;
}

export interface ExportQuery {
  readonly from: number;
  readonly to: number;
  readonly playerId?: string;
  readonly siteId?: string;
  readonly withStatus: boolean;
  readonly format: 'csv' | 'json';
  /** Redis's records (the default), or the ledger's. */
  readonly source?: 'redis' | 'ledger';
}

export const EXPORT_COLUMNS = [
  'wallet',
  'transaction_id',
  'kind',
  'state',
  'resolution',
  'amount',
  'currency',
  'player_id',
  'site_id',
  'session_id',
  'round_id',
  'wallet_round_id',
  'reference_transaction_id',
  'is_compensation',
  'attempts',
  'last_wallet_code',
  'created_at',
  'updated_at',
] as const;

const STATUS_COLUMNS = ['wallet_status', 'wallet_code'] as const;
/** The ledger's rows name the engine call that made the record too (contract 12). */
const LEDGER_COLUMNS = ['engine_request_id'] as const;

type Row = Record<string, string>;

/** A row's columns in the ledger's names; Redis's record gives its reference and update time under them. */
type RowSource = Pick<
  LedgerTransaction,
  'wallet' | 'transactionId' | 'kind' | 'state' | 'resolution' | 'amount' | 'currency' | 'playerId' | 'siteId' | 'sessionId' | 'roundId' | 'walletRoundId' | 'referenceId' | 'isCompensation' | 'attempts' | 'lastWalletCode' | 'createdAt'
> & { readonly updatedAt: number };

function rowOf(r: RowSource): Row {
  return {
    wallet: r.wallet,
    transaction_id: r.transactionId,
    kind: r.kind,
    state: r.state,
    resolution: r.resolution ?? '',
    amount: r.amount,
    currency: r.currency,
    player_id: r.playerId,
    site_id: r.siteId,
    session_id: r.sessionId,
    round_id: r.roundId,
    wallet_round_id: r.walletRoundId,
    reference_transaction_id: r.referenceId ?? '',
    is_compensation: r.isCompensation ? 'true' : 'false',
    attempts: String(r.attempts),
    last_wallet_code: r.lastWalletCode === null ? '' : String(r.lastWalletCode),
    created_at: new Date(r.createdAt).toISOString(),
    updated_at: new Date(r.updatedAt).toISOString(),
  };
}

const redisRowOf = (wallet: string, r: TransactionRecord): Row => rowOf({ ...r, wallet, referenceId: r.referenceTransactionId });

const ledgerRowOf = (t: LedgerTransaction): Row => ({ ...rowOf({ ...t, updatedAt: t.changedAt }), engine_request_id: t.engineRequestId ?? '' });

/** One wallet's ledger rows in the window, a page at a time (keyset, newest first). */
async function* ledgerPages(db: LedgerDb, wallet: string, q: ExportQuery): AsyncGenerator<Row[]> {
  let cursor: HistoryCursor | undefined;
  do {
    const page = await listTransactions(db, { wallet, playerId: q.playerId, siteId: q.siteId, from: q.from, to: q.to }, cursor, LEDGER_PAGE);
    if (page.transactions.length > 0) yield page.transactions.map(ledgerRowOf);
    cursor = page.next ?? undefined;
  } while (cursor !== undefined);
}

const LEDGER_PAGE = 500;

/**
 * A cell a spreadsheet may read as a formula: one starting with = + - @, a tab or a carriage return,
 * at the start of the field or after any character a spreadsheet may split a field on (, ; | tab,
 * a line break), spaces and quotes before it included. An id such as `x;=1+2;y` is three cells to
 * a spreadsheet that splits on `;`.
 */
const FORMULA_CELL = /(^|[,;|\t\r\n])([ "]*)(?=[=+\-@\t\r])/g;
const PLAIN_NUMBER = /^-?[0-9.]+$/;

/**
 * RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled. Each cell that
 * could be read as a formula gets a ' in front and the field is quoted (OWASP's CSV injection
 * advice); a plain number stays as it is. The JSON export carries the exact text.
 */
export function csvField(value: string): string {
  const safe = PLAIN_NUMBER.test(value) ? value : value.replace(FORMULA_CELL, "$1$2'");
  return safe !== value || /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

function csvLine(columns: readonly string[], row: Row): string {
  return `${columns.map((c) => csvField(row[c] ?? '')).join(',')}\r\n`;
}

/** Paces calls to at most `perSecond` a second. */
function pacer(perSecond: number): () => Promise<void> {
  const gapMs = 1000 / perSecond;
  let nextAt = 0;
  return async () => {
    const wait = nextAt - Date.now();
    if (wait > 0) await sleep(wait);
    nextAt = Math.max(Date.now(), nextAt) + gapMs;
  };
}

async function statusColumns(deps: ExportWallet, r: TransactionRecord, pace: () => Promise<void>): Promise<Row> {
  const fields = await statusFieldsOf(r, deps.sessions, deps.providerId);
  if (fields === undefined) return { wallet_status: 'not_asked', wallet_code: '' };
  await pace();
  const said = await deps.wallet.call('status', fields);
  if (said.kind === 'ok') return { wallet_status: 'ok', wallet_code: String(said.response.code) };
  if (said.kind === 'rejected') return { wallet_status: 'rejected', wallet_code: String(said.code) };
  return { wallet_status: 'unknown', wallet_code: '' };
}

/** How an export's rows are written: its content type, what comes before the rows, each row, and what comes after. */
interface ExportFormat {
  readonly contentType: string;
  head(columns: readonly string[]): string;
  row(columns: readonly string[], row: Row, first: boolean): string;
  readonly tail: string;
}

export const EXPORT_FORMATS: Readonly<Record<ExportQuery['format'], ExportFormat>> = {
  csv: {
    contentType: 'text/csv; charset=utf-8',
    head: (columns) => csvLine(columns, Object.fromEntries(columns.map((c) => [c, c]))),
    row: (columns, row) => csvLine(columns, row),
    tail: '',
  },
  json: {
    contentType: 'application/json; charset=utf-8',
    head: () => '[',
    row: (_columns, row, first) => `${first ? '' : ','}\n${JSON.stringify(row)}`,
    tail: '\n]\n',
  },
};

/** One wallet's rows in the window, a page at a time: from the ledger, or Redis's records (with their fresh status when asked). */
async function* walletRows(deps: ExportDeps, w: ExportWallet, q: ExportQuery, pace: () => Promise<void>): AsyncGenerator<Row[]> {
  if (q.source === 'ledger') {
    if (deps.ledgerDb === undefined) throw new Error('an export from the ledger needs DATABASE_URL');
    yield* ledgerPages(deps.ledgerDb, w.id, q);
    return;
  }
  for await (const records of recordsCreatedIn(w.redis, w.layout, q.from, q.to)) {
    const rows: Row[] = [];
    for (const r of records) {
      if ((q.playerId !== undefined && r.playerId !== q.playerId) || (q.siteId !== undefined && r.siteId !== q.siteId)) continue;
      rows.push(q.withStatus ? { ...redisRowOf(w.id, r), ...(await statusColumns(w, r, pace)) } : redisRowOf(w.id, r));
    }
    yield rows;
  }
}

/** The export's text, chunk by chunk (one chunk per page of records). */
export async function* exportChunks(deps: ExportDeps, q: ExportQuery): AsyncGenerator<string> {
  const columns = q.withStatus ? [...EXPORT_COLUMNS, ...STATUS_COLUMNS] : q.source === 'ledger' ? [...EXPORT_COLUMNS, ...LEDGER_COLUMNS] : [...EXPORT_COLUMNS];
  const format = EXPORT_FORMATS[q.format];
  const pace = pacer(deps.statusPerSecond);
  let first = true;
  yield format.head(columns);
  for (const w of deps.wallets) {
    for await (const rows of walletRows(deps, w, q, pace)) {
      let chunk = '';
      for (const row of rows) {
        chunk += format.row(columns, row, first);
        first = false;
      }
      if (chunk !== '') yield chunk;
    }
  }
  if (format.tail !== '') yield format.tail;
}
