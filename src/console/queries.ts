import type { RedisClient } from '../store/redis';
import { sumJobCounts, type Queues } from '../duties/queues';
import { fractionDigits, toMinor } from '../lib/money';
import { newerFirst, type AuditTrail, type StoredAuditEntry } from '../store/audit';
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

/** One wallet of the registry as the console reads it: its own keys, stores, queues and audit trail. */
export interface ConsoleWallet {
  readonly id: string;
  readonly redis: RedisClient;
  readonly layout: ShardLayout;
  readonly store: TransactionStore;
  readonly sessions: SessionStore;
  readonly queues: Queues;
  readonly audit: AuditTrail;
}

/**
 * What the queries read: the wallets asked about (the `wallet` filter: one, or every wallet of the
 * registry in its order) and the shared settings. Wallets are separate worlds (contract 11): a list
 * reads each wallet's indexes in turn and every row it returns names its wallet.
 */
export interface QueryDeps {
  readonly wallets: readonly ConsoleWallet[];
  readonly settings: ConsoleSettings;
  readonly now: () => number;
}

/** A record with the wallet it belongs to: the same transaction id in two wallets is two records. */
export type WalletRecord = TransactionRecord & { readonly wallet: string };

/** The records of one wallet, named by it. */
export function inWallet(wallet: string, records: readonly TransactionRecord[]): WalletRecord[] {
  return records.map((r) => ({ ...r, wallet }));
}

/** Pages of one wallet's records, then the next wallet's, each page with the wallet it came from. */
async function* walletPages(deps: QueryDeps, pagesOf: (w: ConsoleWallet) => AsyncIterable<TransactionRecord[]>): AsyncGenerator<{ w: ConsoleWallet; records: WalletRecord[] }> {
  for (const w of deps.wallets) for await (const records of pagesOf(w)) yield { w, records: inWallet(w.id, records) };
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
async function collect<T>(
  pages: AsyncIterable<{ w: ConsoleWallet; records: WalletRecord[] }>,
  pick: (w: ConsoleWallet, records: WalletRecord[]) => Promise<T[]>,
  offset: number,
  limit: number,
): Promise<Page<T>> {
  const items: T[] = [];
  let total = 0;
  let scanned = 0;
  for await (const { w, records } of pages) {
    scanned += records.length;
    for (const item of await pick(w, records)) {
      if (total >= offset && items.length < limit) items.push(item);
      total += 1;
    }
    if (scanned >= SCAN_LIMIT) return { items, total, truncated: true };
  }
  return { items, total, truncated: false };
}

/** Dead or pending transactions (the failed-transaction queue), filtered. */
export function listTransactions(deps: QueryDeps, f: Filter): Promise<Page<WalletRecord>> {
  const now = deps.now();
  // The pending index also holds records that are being settled right now: keep the state asked for.
  const state = f.state ?? 'dead';
  return collect(
    walletPages(deps, (w) => recordsOfIndex(w.redis, w.layout, state)),
    async (_w, rs) => rs.filter((r) => r.state === state && matches(r, f, now)),
    f.offset,
    f.limit,
  );
}

export interface StaleRound {
  readonly bet: WalletRecord;
  readonly ageSeconds: number;
}

/** Bets whose round had no closing call, older than STALE_ROUND_SECONDS (within the retention). */
export function staleRounds(deps: QueryDeps, f: Filter): Promise<Page<StaleRound>> {
  const now = deps.now();
  const from = Math.max(f.from ?? 0, now - deps.settings.retentionSeconds * 1000);
  const to = Math.min(f.to ?? Infinity, now - deps.settings.staleRoundSeconds * 1000);
  return collect(
    walletPages(deps, (w) => recordsCreatedIn(w.redis, w.layout, from, to)),
    async (w, rs) => {
      const bets = rs.filter((r) => r.kind === 'debit' && r.state === 'succeeded' && matches(r, f, now));
      if (bets.length === 0) return [];
      // One command per round, each in its player's shard (auto-pipelined per node).
      const rounds = await Promise.all(bets.map((b) => w.redis.hmget(w.layout.keys(w.store.shardOf(b)).round(b.playerId, b.siteId, b.walletRoundId), 'bet', 'closed_by')));
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
  readonly win: WalletRecord;
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
    walletPages(deps, (w) => recordsCreatedIn(w.redis, w.layout, f.from ?? window.from, f.to ?? window.to)),
    async (w, rs) => {
      const wins = rs.filter((r) => r.kind === 'credit' && r.state !== 'failed' && matches(r, f, now));
      // A win's bet is in its wallet, in its player's shard.
      const found = await Promise.all(wins.map((win) => (win.referenceTransactionId === null ? undefined : w.store.get(win.referenceTransactionId, w.store.shardOf(win)))));
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

/** One wallet's line of the overview. */
export interface WalletCounts {
  readonly wallet: string;
  readonly pending: number;
  readonly dead: number;
  readonly compensating: number;
  readonly oldestPendingAt: number | null;
  readonly endingTokens: number;
  readonly terminateFailedTokens: number;
  readonly truncated: boolean;
}

export interface Overview extends Omit<WalletCounts, 'wallet'> {
  /** Each wallet asked about, in the registry's order. */
  readonly wallets: WalletCounts[];
  readonly queues: QueueDepth[];
  readonly bigWinsToday: Page<BigWin>;
  readonly deadSample: WalletRecord[];
}

/** Each queue name's job counts, summed over the shards' (and wallets') queues of that name. */
async function queueDepths(queues: readonly Queues['all'][number][]): Promise<QueueDepth[]> {
  const names = [...new Set(queues.map((q) => q.name))];
  return Promise.all(
    names.map(async (queue) => ({
      queue,
      counts: sumJobCounts(await Promise.all(queues.filter((q) => q.name === queue).map((q) => q.getJobCounts('waiting', 'delayed', 'active', 'failed', 'prioritized')))),
    })),
  );
}

async function walletCounts(w: ConsoleWallet): Promise<WalletCounts> {
  let pending = 0;
  let compensating = 0;
  let oldest: number | null = null;
  let scanned = 0;
  for await (const records of recordsOfIndex(w.redis, w.layout, 'pending')) {
    for (const r of records) {
      if (r.state !== 'pending') continue;
      pending += 1;
      if (r.isCompensation) compensating += 1;
      oldest = oldest === null ? r.createdAt : Math.min(oldest, r.createdAt);
    }
    scanned += records.length;
    if (scanned >= SCAN_LIMIT) break;
  }
  const count = async (key: (shard: number) => string): Promise<number> => (await Promise.all(w.layout.all.map((shard) => w.redis.zcard(key(shard))))).reduce((a, b) => a + b, 0);
  const [dead, ending, failed] = await Promise.all([
    count((shard) => w.layout.keys(shard).deadIndex()),
    count((shard) => w.layout.keys(shard).endingIndex()),
    count((shard) => w.layout.keys(shard).terminateFailedIndex()),
  ]);
  return { wallet: w.id, pending, dead, compensating, oldestPendingAt: oldest, endingTokens: ending, terminateFailedTokens: failed, truncated: scanned >= SCAN_LIMIT };
}

const sum = (wallets: readonly WalletCounts[], field: 'pending' | 'dead' | 'compensating' | 'endingTokens' | 'terminateFailedTokens'): number => wallets.reduce((n, w) => n + w[field], 0);

/** One glance: is money stuck? The wallets' sums, and each wallet's own line. */
export async function overview(deps: QueryDeps): Promise<Overview> {
  const [wallets, queues, bigWinsToday, deadSample] = await Promise.all([
    Promise.all(deps.wallets.map(walletCounts)),
    queueDepths(deps.wallets.flatMap((w) => w.queues.all)),
    bigWins(deps, { offset: 0, limit: 10 }),
    listTransactions(deps, { state: 'dead', offset: 0, limit: 10 }),
  ]);
  const oldest = wallets.map((w) => w.oldestPendingAt).filter((t) => t !== null);
  return {
    wallets,
    pending: sum(wallets, 'pending'),
    dead: sum(wallets, 'dead'),
    compensating: sum(wallets, 'compensating'),
    oldestPendingAt: oldest.length === 0 ? null : Math.min(...oldest),
    queues,
    endingTokens: sum(wallets, 'endingTokens'),
    terminateFailedTokens: sum(wallets, 'terminateFailedTokens'),
    bigWinsToday,
    deadSample: deadSample.items,
    truncated: wallets.some((w) => w.truncated),
  };
}

export type WalletToken = EndingToken & { readonly wallet: string };

/** Each wallet's tokens in turn, at most `limit` in all; `total` over every wallet asked about. */
export async function tokensWaiting(deps: QueryDeps, index: 'ending' | 'failed', limit: number): Promise<{ tokens: WalletToken[]; total: number }> {
  const per = await Promise.all(deps.wallets.map(async (w) => ({ w, found: await endingTokens(w.redis, w.layout, index, limit) })));
  return {
    tokens: per.flatMap(({ w, found }) => found.tokens.map((t) => ({ ...t, wallet: w.id }))).slice(0, limit),
    total: per.reduce((n, p) => n + p.found.total, 0),
  };
}

/** What a session shows operators: never its wallet token. */
export type SessionView = Omit<Session, 'token'>;

export type WalletAuditEntry = StoredAuditEntry & { readonly wallet: string };

export interface TransactionDetail {
  readonly wallet: string;
  readonly record: WalletRecord;
  readonly attempts: AttemptLogEntry[];
  readonly compensation: WalletRecord | undefined;
  /** Every transaction of the round the gateway still indexes for the player, oldest first. */
  readonly round: WalletRecord[];
  readonly session: SessionView | undefined;
  readonly audit: WalletAuditEntry[];
}

/** Audit entries read back to find one transaction's. */
const AUDIT_LOOKBACK = 1000;

/**
 * Which wallets hold a transaction id: transaction ids are unique per wallet only (contract 11), so
 * an id without its wallet may name records in several.
 */
export async function walletsHolding(deps: QueryDeps, transactionId: string): Promise<ConsoleWallet[]> {
  const found = await Promise.all(deps.wallets.map(async (w) => ((await w.store.get(transactionId)) === undefined ? undefined : w)));
  return found.filter((w) => w !== undefined);
}

/** One transaction of one wallet, with everything its page shows. */
export async function transactionDetail(w: ConsoleWallet, transactionId: string): Promise<TransactionDetail | undefined> {
  const record = await w.store.get(transactionId);
  if (record === undefined) return undefined;
  const [attempts, compensation, recent, session, audit] = await Promise.all([
    w.store.attemptLog(record),
    record.compensationId === null ? undefined : w.store.get(record.compensationId, w.store.shardOf(record)),
    playerRecentRecords(w.redis, w.layout, record.playerId, record.siteId, 200),
    w.sessions.get(record.sessionId),
    w.audit.recent(AUDIT_LOOKBACK),
  ]);
  const round = recent.filter((r) => r.roundId === record.roundId).sort((a, b) => a.createdAt - b.createdAt);
  const { token: _token, ...sessionView } = session ?? { token: '' };
  return {
    wallet: w.id,
    record: { ...record, wallet: w.id },
    attempts,
    compensation: compensation === undefined ? undefined : { ...compensation, wallet: w.id },
    round: inWallet(w.id, round),
    session: session === undefined ? undefined : (sessionView as SessionView),
    audit: audit.filter((e) => e.transactionId === transactionId || e.targetId === transactionId).map((e) => ({ ...e, wallet: w.id })),
  };
}

export interface PlayerRound {
  readonly wallet: string;
  readonly roundId: string;
  readonly records: WalletRecord[];
}

/** A player's recent rounds in each wallet asked about, newest first within a wallet (from the player's index of recent transactions). */
export async function playerRounds(deps: QueryDeps, playerId: string, siteId: string, limit: number): Promise<PlayerRound[]> {
  const per = await Promise.all(deps.wallets.map(async (w) => ({ w, records: await playerRecentRecords(w.redis, w.layout, playerId, siteId, limit) })));
  return per.flatMap(({ w, records }) => {
    const rounds = new Map<string, WalletRecord[]>();
    for (const r of inWallet(w.id, records)) rounds.set(r.roundId, [...(rounds.get(r.roundId) ?? []), r]);
    return [...rounds].map(([roundId, rs]) => ({ wallet: w.id, roundId, records: rs.sort((a, b) => a.createdAt - b.createdAt) }));
  });
}

/**
 * The audit trails of the wallets asked about, merged newest first; `before` pages further back in
 * all of them. Two wallets' streams may hold the same entry id: a page never ends between such
 * twins, since the next page starts strictly before the last id shown.
 */
export async function recentAudit(deps: QueryDeps, count: number, before?: string): Promise<WalletAuditEntry[]> {
  const per = await Promise.all(deps.wallets.map(async (w) => (await w.audit.recent(count, before)).map((e) => ({ ...e, wallet: w.id }))));
  const merged = per.flat().sort(newerFirst);
  let end = Math.min(count, merged.length);
  while (end > 0 && end < merged.length && merged[end]!.id === merged[end - 1]!.id) end += 1;
  return merged.slice(0, end);
}
