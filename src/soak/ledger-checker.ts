import type { ChangeRow } from '../ledger/rows';
import type { TransactionView } from '../sim';

/**
 * The ledger against the gateway's records and the wallet's books, once the outbox is drained
 * (contract 12: the ledger ends equal to the gateway's records, every final state once). Pure, so
 * each finding is unit-tested on synthetic rows. One wallet at a time.
 *
 * - Redis: every record ends in `ledger_transactions` (the newest change) and as the last row of
 *   `ledger_changes` with the same fields, its change numbers exactly 1..n, n the record's own
 *   count (`change_no`); nothing the ledger holds is unknown to Redis.
 * - The wallet: a record final in the ledger says what the wallet's books must show (a succeeded
 *   debit, win or refund applied there; a failed one not, a failed or compensated debit not held),
 *   and every transaction the wallet applied has a record in the ledger.
 */

/** The fields of a change compared between Redis and the ledger (what the outbox carries of a record). */
export const COMPARED = [
  'changeNo', 'kind', 'state', 'amount', 'currency', 'playerId', 'siteId', 'sessionId', 'roundId', 'walletRoundId',
  'referenceId', 'isCompensation', 'compensationId', 'attempts', 'lastWalletCode', 'balance', 'resolution', 'note',
] as const satisfies readonly (keyof ChangeRow)[];

/** A record as Redis holds it or a change as the ledger holds it, named by wallet, id and creation time. */
export type RecordState = Pick<ChangeRow, 'wallet' | 'transactionId' | 'createdAt' | (typeof COMPARED)[number]>;

/** A row of `ledger_changes`: the record's state after that change, and the outbox entry it came from. */
export type LedgerChange = RecordState & Pick<ChangeRow, 'outboxId'>;

export interface LedgerCheckInput {
  readonly wallet: string;
  /** Every transaction record of the wallet in Redis. */
  readonly redis: readonly RecordState[];
  /** Every row of `ledger_changes` of the wallet. */
  readonly changes: readonly LedgerChange[];
  /** Every row of `ledger_transactions` of the wallet (each record's newest change). */
  readonly newest: readonly RecordState[];
  /** Transaction ids the engine sent to this wallet. */
  readonly historyIds: ReadonlySet<string>;
  /** The wallet's books. */
  readonly books: readonly TransactionView[];
}

export type LedgerFindingKind =
  | 'ledger-missing'
  | 'ledger-differs'
  | 'ledger-change-missing'
  | 'ledger-change-extra'
  | 'ledger-twice'
  | 'ledger-unknown'
  | 'ledger-wallet-disagrees'
  | 'ledger-wallet-missing';

export const LEDGER_FINDING_KINDS: readonly LedgerFindingKind[] = [
  'ledger-missing',
  'ledger-differs',
  'ledger-change-missing',
  'ledger-change-extra',
  'ledger-twice',
  'ledger-unknown',
  'ledger-wallet-disagrees',
  'ledger-wallet-missing',
];

export interface LedgerFinding {
  readonly kind: LedgerFindingKind;
  readonly transactionId: string;
  readonly detail: string;
}

export interface LedgerComparison {
  readonly findings: readonly LedgerFinding[];
  /** Records in Redis, records and changes in the ledger. */
  readonly counts: { readonly redisRecords: number; readonly ledgerRecords: number; readonly changes: number };
  /** Ledger records final and held against the wallet's books, and the wallet's transactions found in the ledger. */
  readonly wallet: { readonly finalRecords: number; readonly booksTransactions: number };
}

const recordKey = (r: Pick<RecordState, 'transactionId' | 'createdAt'>): string => `${r.transactionId}\u0000${r.createdAt}`;

function groupBy<T>(rows: readonly T[], key: (row: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const row of rows) {
    const k = key(row);
    const list = groups.get(k);
    if (list === undefined) groups.set(k, [row]);
    else list.push(row);
  }
  return groups;
}

/** `field: ledger X, redis Y` for each compared field that differs. */
function differences(ledger: RecordState, redis: RecordState): string[] {
  return COMPARED.filter((f) => ledger[f] !== redis[f]).map((f) => `${f}: ledger ${String(ledger[f])}, redis ${String(redis[f])}`);
}

/** The numbers of 1..n missing from `numbers`. */
function missingNumbers(numbers: readonly number[], n: number): number[] {
  const have = new Set(numbers);
  const missing: number[] = [];
  for (let i = 1; i <= n; i += 1) if (!have.has(i)) missing.push(i);
  return missing;
}

export function compareLedger(input: LedgerCheckInput): LedgerComparison {
  const findings: LedgerFinding[] = [];
  const find = (kind: LedgerFindingKind, transactionId: string, detail: string): void => void findings.push({ kind, transactionId, detail });
  const changesOf = groupBy(input.changes, recordKey);
  const newestOf = new Map(input.newest.map((r) => [recordKey(r), r]));
  const redisOf = new Map(input.redis.map((r) => [recordKey(r), r]));
  const redisIds = new Set(input.redis.map((r) => r.transactionId));

  for (const record of input.redis) {
    const key = recordKey(record);
    const changes = (changesOf.get(key) ?? []).slice().sort((a, b) => a.changeNo - b.changeNo);
    const newest = newestOf.get(key);
    if (changes.length === 0 && newest === undefined) {
      find('ledger-missing', record.transactionId, `${record.kind} ${record.state} (${record.changeNo} changes) is in Redis, not in the ledger`);
      continue;
    }
    if (newest === undefined) find('ledger-differs', record.transactionId, `ledger_transactions has no row; Redis holds ${record.state}`);
    else {
      const diff = differences(newest, record);
      if (diff.length > 0) find('ledger-differs', record.transactionId, `ledger_transactions: ${diff.join('; ')}`);
    }
    const last = changes.at(-1);
    if (last !== undefined && last.changeNo === record.changeNo) {
      const diff = differences(last, record);
      if (diff.length > 0) find('ledger-differs', record.transactionId, `its last change in ledger_changes: ${diff.join('; ')}`);
    }
    const missing = missingNumbers(changes.map((c) => c.changeNo), record.changeNo);
    if (missing.length > 0) find('ledger-change-missing', record.transactionId, `changes ${missing.join(', ')} of ${record.changeNo} are not in ledger_changes`);
    const extra = changes.filter((c) => c.changeNo < 1 || c.changeNo > record.changeNo).map((c) => c.changeNo);
    if (extra.length > 0) find('ledger-change-extra', record.transactionId, `ledger_changes holds changes ${extra.join(', ')}; Redis made ${record.changeNo}`);
  }

  // The same record twice: one id under two creation times while Redis holds one record of it, or one outbox entry in two rows.
  const ledgerRecords = new Set([...changesOf.keys(), ...newestOf.keys()]);
  const creationsOf = groupBy([...ledgerRecords], (key) => key.slice(0, key.indexOf('\u0000')));
  for (const [id, keys] of creationsOf) {
    const inRedis = input.redis.filter((r) => r.transactionId === id).length;
    if (redisIds.has(id) && keys.length > inRedis) find('ledger-twice', id, `the ledger holds ${keys.length} records of it, Redis ${inRedis}`);
  }
  for (const [outboxId, rows] of groupBy(input.changes, (c) => c.outboxId)) {
    if (rows.length > 1) find('ledger-twice', rows[0]!.transactionId, `outbox entry ${outboxId} is in ${rows.length} rows (changes ${rows.map((r) => r.changeNo).join(', ')})`);
  }
  for (const key of ledgerRecords) {
    if (redisOf.has(key)) continue;
    const row = newestOf.get(key) ?? (changesOf.get(key) as LedgerChange[])[0]!;
    if (redisIds.has(row.transactionId)) continue;
    find('ledger-unknown', row.transactionId, `${row.kind} ${row.state} is in the ledger, not in Redis; the engine ${input.historyIds.has(row.transactionId) ? 'sent' : 'never sent'} that id`);
  }

  const wallet = compareBooks(input, find);
  return { findings, counts: { redisRecords: input.redis.length, ledgerRecords: ledgerRecords.size, changes: input.changes.length }, wallet };
}

/**
 * The ledger's final states against the wallet's books. A rollback that succeeded without a
 * transaction of its own in the books is one the wallet took as a no-op: its debit was already
 * reversed by another rollback (an engine refund and a compensation of one bet).
 */
function compareBooks(input: LedgerCheckInput, find: (kind: LedgerFindingKind, id: string, detail: string) => void): LedgerComparison['wallet'] {
  const books = new Map(input.books.map((t) => [t.transactionId, t]));
  const ledgerIds = new Set([...input.newest, ...input.changes].map((r) => r.transactionId));
  let finalRecords = 0;
  for (const r of input.newest) {
    if (r.state !== 'succeeded' && r.state !== 'failed' && r.state !== 'compensated') continue;
    finalRecords += 1;
    const t = books.get(r.transactionId);
    const held = t !== undefined && !t.rolledBack;
    let disagrees: string | undefined;
    if (r.state === 'succeeded') {
      const noOpReversal = r.kind === 'rollback' && t === undefined && r.referenceId !== null && books.get(r.referenceId)?.rolledBack === true;
      if (t === undefined && !noOpReversal) disagrees = 'the wallet never applied it';
    } else if (r.kind === 'debit' ? held : t !== undefined) {
      disagrees = 'the wallet applied it';
    }
    if (disagrees !== undefined) find('ledger-wallet-disagrees', r.transactionId, `${r.kind} is ${r.state} in the ledger; ${disagrees}`);
  }
  for (const t of input.books) {
    if (!ledgerIds.has(t.transactionId)) find('ledger-wallet-missing', t.transactionId, `${t.op} ${t.amount} applied by the wallet has no record in the ledger`);
  }
  return { finalRecords, booksTransactions: input.books.length };
}

/** The report's lines: `ledger: equal …`, or the count of differences by kind and each difference. */
export function ledgerLines(perWallet: readonly { readonly wallet: string; readonly comparison: LedgerComparison }[], limit = 20): string[] {
  const all = perWallet.flatMap(({ wallet, comparison }) => comparison.findings.map((f) => ({ wallet, ...f })));
  const sum = (of: (c: LedgerComparison) => number): number => perWallet.reduce((n, w) => n + of(w.comparison), 0);
  const about =
    `${sum((c) => c.counts.redisRecords)} records in Redis, ${sum((c) => c.counts.ledgerRecords)} in the ledger with ${sum((c) => c.counts.changes)} changes; ` +
    `wallet: ${sum((c) => c.wallet.finalRecords)} final records held against the books, ${sum((c) => c.wallet.booksTransactions)} applied transactions found`;
  if (all.length === 0) return [`ledger: equal (${about})`];
  const byKind = LEDGER_FINDING_KINDS.map((k) => [k, all.filter((f) => f.kind === k).length] as const).filter(([, n]) => n > 0);
  return [
    `ledger: ${all.length} differences (${byKind.map(([k, n]) => `${k} ${n}`).join(', ')}; ${about})`,
    ...all.slice(0, limit).map((f) => `  ! ${f.kind}: ${perWallet.length > 1 ? `wallet ${f.wallet} ` : ''}tx ${f.transactionId}: ${f.detail}`),
    ...(all.length > limit ? [`  … and ${all.length - limit} more`] : []),
  ];
}
