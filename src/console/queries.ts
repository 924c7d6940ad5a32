import type { RedisClient } from '../store/redis';
import { sumJobCounts, type Queues } from '../duties/queues';
import { fractionDigits, toMinor } from '../lib/money';
import type { AuditTrail, StoredAuditEntry } from '../store/audit';
import { endingTokens, playerRecentRecords, recordsCreatedIn, recordsOfIndex, type EndingToken } from '../store/record-scan';
import type { ShardLayout } from '../store/shards';
import type { SessionStore } from '../store/sessions';
import type { TransactionStore } from '../store/transactions';
import type { AttemptLogEntry, Session, TransactionRecord } from '../store/types';

/**
 * What the operators' console shows, read from the store in pages. Each list reads at most
 * SCAN_LIMIT records of its index per request, and says so when it stopped there.
 */
export const SCAN_LIMIT = 10_000;

export interface ConsoleSettings {
  readonly staleRoundSeconds: number;
  readonly bigWinAmount: string | undefined;
  readonly bigWinMultiplier: string | undefined;
  readonly retentionSeconds: number;
}

export interface QueryDeps {
  readonly redis: RedisClient;
  readonly layout: ShardLayout;
  readonly store: TransactionStore;
  readonly sessions: SessionStore;
  readonly queues: Queues;
  readonly audit: AuditTrail;
  readonly settings: ConsoleSettings;
  readonly now: () => number;
}

/** The lists' filters; every one optional. Times in ms since the epoch, ages in seconds. */
export interface Filter {
  readonly state?: 'dead' | 'pending';
  readonly kind?: 'debit' | 'credit' | 'rollback';
  readonly playerId?: string;
  readonly siteId?: string;
  readonly from?: number;
  readonly to?: number;
  readonly minAgeSeconds?: number;
  readonly offset: number;
  readonly limit: number;
}

export interface Page<T> {
  readonly items: T[];
  /** Matches found (up to the scan limit). */
  readonly total: number;
  /** The scan stopped at SCAN_LIMIT records: there may be more. */
  readonly truncated: boolean;
}

function matches(r: TransactionRecord, f: Omit<Filter, 'state' | 'offset' | 'limit'>, now: number): boolean {
  return (
    (f.kind === undefined || r.kind === f.kind) &&
    (f.playerId === undefined || r.playerId === f.playerId) &&
    (f.siteId === undefined || r.siteId === f.siteId) &&
    (f.from === undefined || r.createdAt >= f.from) &&
    (f.to === undefined || r.createdAt <= f.to) &&
    (f.minAgeSeconds === undefined || now - r.createdAt >= f.minAgeSeconds * 1000)
  );
}

/** Collects the filtered items of paged records, keeping only the page asked for. */
async function collect<T>(pages: AsyncIterable<TransactionRecord[]>, pick: (records: TransactionRecord[]) => Promise<T[]>, offset: number, limit: number): Promise<Page<T>> {
  const items: T[] = [];
  let total = 0;
  let scanned = 0;
  for await (const records of pages) {
    scanned += records.length;
    for (const item of await pick(records)) {
      if (total >= offset && items.length < limit) items.push(item);
      total += 1;
    }
    if (scanned >= SCAN_LIMIT) return { items, total, truncated: true };
  }
  return { items, total, truncated: false };
}

/** Dead or pending transactions (the failed-transaction queue), filtered. */
export function listTransactions(deps: QueryDeps, f: Filter): Promise<Page<TransactionRecord>> {
  const now = deps.now();
  // The pending index also holds records that are being settled right now: keep the state asked for.
  const state = f.state ?? 'dead';
  return collect(recordsOfIndex(deps.redis, deps.layout, state), async (rs) => rs.filter((r) => r.state === state && matches(r, f, now)), f.offset, f.limit);
}

export interface StaleRound {
  readonly bet: TransactionRecord;
  readonly ageSeconds: number;
}

/** Bets whose round had no closing call, older than STALE_ROUND_SECONDS (within the retention). */
export function staleRounds(deps: QueryDeps, f: Filter): Promise<Page<StaleRound>> {
  const now = deps.now();
  const from = Math.max(f.from ?? 0, now - deps.settings.retentionSeconds * 1000);
  const to = Math.min(f.to ?? Infinity, now - deps.settings.staleRoundSeconds * 1000);
  return collect(
    recordsCreatedIn(deps.redis, deps.layout, from, to),
    async (rs) => {
      const bets = rs.filter((r) => r.kind === 'debit' && r.state === 'succeeded' && matches(r, f, now));
      if (bets.length === 0) return [];
      // One command per round, each in its player's shard (auto-pipelined per node).
      const rounds = await Promise.all(
        bets.map((b) => deps.redis.hmget(deps.layout.keys(deps.store.shardOf(b)).round(b.playerId, b.siteId, b.walletRoundId), 'bet', 'closed_by')),
      );
      return bets
        .filter((b, i) => {
          const [bet, closedBy] = rounds[i] ?? [];
          return bet === b.transactionId && !closedBy;
        })
        .map((bet) => ({ bet, ageSeconds: Math.floor((now - bet.createdAt) / 1000) }));
    },
    f.offset,
    f.limit,
  );
}

export interface BigWin {
  readonly win: TransactionRecord;
  readonly betAmount: string | null;
  /** Which thresholds it passed. */
  readonly over: ('amount' | 'multiplier')[];
}

/** Whether `a` ≥ `b` × `factor`, exactly (decimal texts). */
function atLeast(a: string, b: string, factor = '1'): boolean {
  const scale = Math.max(fractionDigits(a), fractionDigits(b));
  const fd = fractionDigits(factor);
  return toMinor(a, scale) * 10n ** BigInt(fd) >= toMinor(b, scale) * toMinor(factor, fd);
}

/** The UTC day `now` is in, as [start, end] ms. */
export function today(now: number): { from: number; to: number } {
  const start = new Date(now);
  start.setUTCHours(0, 0, 0, 0);
  return { from: start.getTime(), to: now };
}

/** Wins over BIG_WIN_AMOUNT and/or BIG_WIN_MULTIPLIER × their bet (default window: today, UTC). */
export function bigWins(deps: QueryDeps, f: Filter): Promise<Page<BigWin>> {
  const now = deps.now();
  const { bigWinAmount, bigWinMultiplier } = deps.settings;
  const window = today(now);
  return collect(
    recordsCreatedIn(deps.redis, deps.layout, f.from ?? window.from, f.to ?? window.to),
    async (rs) => {
      const wins = rs.filter((r) => r.kind === 'credit' && r.state !== 'failed' && matches(r, f, now));
      // A win's bet is in its player's shard.
      const found = await Promise.all(wins.map((w) => (w.referenceTransactionId === null ? undefined : deps.store.get(w.referenceTransactionId, deps.store.shardOf(w)))));
      const bets = new Map(found.filter((b) => b !== undefined).map((b) => [b.transactionId, b]));
      const out: BigWin[] = [];
      for (const win of wins) {
        const betAmount = bets.get(win.referenceTransactionId ?? '')?.amount ?? null;
        const over: BigWin['over'] = [];
        if (bigWinAmount !== undefined && atLeast(win.amount, bigWinAmount)) over.push('amount');
        if (bigWinMultiplier !== undefined && betAmount !== null && atLeast(win.amount, betAmount, bigWinMultiplier)) over.push('multiplier');
        if (over.length > 0) out.push({ win, betAmount, over });
      }
      return out;
    },
    f.offset,
    f.limit,
  );
}

export interface QueueDepth {
  readonly queue: string;
  readonly counts: Record<string, number>;
}

export interface Overview {
  readonly pending: number;
  readonly dead: number;
  /** Debits being rolled back (their compensation is pending). */
  readonly compensating: number;
  readonly oldestPendingAt: number | null;
  readonly queues: QueueDepth[];
  readonly endingTokens: number;
  readonly terminateFailedTokens: number;
  readonly bigWinsToday: Page<BigWin>;
  readonly deadSample: TransactionRecord[];
  readonly truncated: boolean;
}

/** Each queue name's job counts, summed over the shards' queues of that name. */
async function queueDepths(queues: Queues): Promise<QueueDepth[]> {
  const names = [...new Set(queues.all.map((q) => q.name))];
  return Promise.all(
    names.map(async (queue) => ({
      queue,
      counts: sumJobCounts(await Promise.all(queues.all.filter((q) => q.name === queue).map((q) => q.getJobCounts('waiting', 'delayed', 'active', 'failed', 'prioritized')))),
    })),
  );
}

/** One glance: is money stuck? */
export async function overview(deps: QueryDeps): Promise<Overview> {
  let pending = 0;
  let compensating = 0;
  let oldest: number | null = null;
  let scanned = 0;
  for await (const records of recordsOfIndex(deps.redis, deps.layout, 'pending')) {
    for (const r of records) {
      if (r.state !== 'pending') continue;
      pending += 1;
      if (r.isCompensation) compensating += 1;
      oldest = oldest === null ? r.createdAt : Math.min(oldest, r.createdAt);
    }
    scanned += records.length;
    if (scanned >= SCAN_LIMIT) break;
  }
  const count = async (key: (shard: number) => string): Promise<number> =>
    (await Promise.all(deps.layout.all.map((shard) => deps.redis.zcard(key(shard))))).reduce((a, b) => a + b, 0);
  const [dead, ending, failed, queues, bigWinsToday, deadSample] = await Promise.all([
    count((shard) => deps.layout.keys(shard).deadIndex()),
    count((shard) => deps.layout.keys(shard).endingIndex()),
    count((shard) => deps.layout.keys(shard).terminateFailedIndex()),
    queueDepths(deps.queues),
    bigWins(deps, { offset: 0, limit: 10 }),
    listTransactions(deps, { state: 'dead', offset: 0, limit: 10 }),
  ]);
  return {
    pending,
    dead,
    compensating,
    oldestPendingAt: oldest,
    queues,
    endingTokens: ending,
    terminateFailedTokens: failed,
    bigWinsToday,
    deadSample: deadSample.items,
    truncated: scanned >= SCAN_LIMIT,
  };
}

export function tokensWaiting(deps: QueryDeps, index: 'ending' | 'failed', limit: number): Promise<{ tokens: EndingToken[]; total: number }> {
  return endingTokens(deps.redis, deps.layout, index, limit);
}

/** What a session shows operators: never its wallet token. */
export type SessionView = Omit<Session, 'token'>;

export interface TransactionDetail {
  readonly record: TransactionRecord;
  readonly attempts: AttemptLogEntry[];
  readonly compensation: TransactionRecord | undefined;
  /** Every transaction of the round the gateway still indexes for the player, oldest first. */
  readonly round: TransactionRecord[];
  readonly session: SessionView | undefined;
  readonly audit: StoredAuditEntry[];
}

/** Audit entries read back to find one transaction's. */
const AUDIT_LOOKBACK = 1000;

export async function transactionDetail(deps: QueryDeps, transactionId: string): Promise<TransactionDetail | undefined> {
  const record = await deps.store.get(transactionId);
  if (record === undefined) return undefined;
  const [attempts, compensation, recent, session, audit] = await Promise.all([
    deps.store.attemptLog(record),
    record.compensationId === null ? undefined : deps.store.get(record.compensationId, deps.store.shardOf(record)),
    playerRecentRecords(deps.redis, deps.layout, record.playerId, record.siteId, 200),
    deps.sessions.get(record.sessionId),
    deps.audit.recent(AUDIT_LOOKBACK),
  ]);
  const round = recent.filter((r) => r.roundId === record.roundId).sort((a, b) => a.createdAt - b.createdAt);
  const { token: _token, ...sessionView } = session ?? { token: '' };
  return {
    record,
    attempts,
    compensation,
    round,
    session: session === undefined ? undefined : (sessionView as SessionView),
    audit: audit.filter((e) => e.transactionId === transactionId || e.targetId === transactionId),
  };
}

export interface PlayerRound {
  readonly roundId: string;
  readonly records: TransactionRecord[];
}

/** A player's recent rounds, newest first (from the player's index of recent transactions). */
export async function playerRounds(deps: QueryDeps, playerId: string, siteId: string, limit: number): Promise<PlayerRound[]> {
  const records = await playerRecentRecords(deps.redis, deps.layout, playerId, siteId, limit);
  const rounds = new Map<string, TransactionRecord[]>();
  for (const r of records) rounds.set(r.roundId, [...(rounds.get(r.roundId) ?? []), r]);
  return [...rounds].map(([roundId, rs]) => ({ roundId, records: rs.sort((a, b) => a.createdAt - b.createdAt) }));
}
