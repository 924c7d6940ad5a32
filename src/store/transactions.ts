import { AUDIT_CAP, auditFields, type AuditEntry } from './audit';
import { RESERVED_ID_PREFIX } from '../lib/reserved-ids';
import { spanned, tracingOn } from '../lib/tracing';
import type { Keys } from './keys';
import type { RedisClient } from './redis';
import { bodyPieceCount, claimRecordValues, decodeAttempt, decodeRecord, encodeAttempt, newRecordFields, pairsToObject, settleFields, updateFields, type RecordUpdate } from './record-codec';
import { PLAYER_RECENT_CAP, trimsIndexes } from './record-indexes';
import { defineScript, registerScripts, runScript } from './scripts';
import type { ShardLayout } from './shards';
import {
  FINAL_STATES,
  NOTHING_REVERSED_NOTE,
  type AttemptLogEntry,
  type NewTransaction,
  type Resolution,
  type TransactionError,
  type TransactionRecord,
  type TransactionState,
} from './types';

/**
 * Transaction records, rounds and the pending index in Redis. Every change that must be atomic is
 * one Lua script, so the hot path costs one round trip to claim and one to settle.
 */

/** Attempts one record's log keeps (a redrive's fresh budget adds up to 11 more). */
export const ATTEMPT_LOG_CAP = 24;

export interface ClaimInput {
  record: NewTransaction;
  /** The amount as exact decimal text without trailing fraction zeros (compares a refund with its bet). */
  exactAmount: string;
  /** Until then the claimer owns the first attempt; after it, the sweeper may take over. */
  leaseUntil: number;
  /**
   * Renew the session's sliding expiry to this many seconds when the claim goes through (an
   * `ending` session keeps having none), in the same round trip.
   */
  sessionTtlSeconds?: number;
  /** The gateway's request id of the engine call: kept in the ledger's row of the claim only, never in the record. */
  engineRequestId?: string;
}

/** `sessionBalance`: the last balance the session holds, read in the same script (null: no session any more). */
export type ClaimResult =
  | { readonly kind: 'claimed'; readonly sessionBalance: string }
  /** Claimed, but held: it closes a round whose earlier credits/rollbacks are still pending. */
  | { readonly kind: 'deferred'; readonly sessionBalance: string }
  | { readonly kind: 'duplicate'; readonly record: TransactionRecord; readonly sessionBalance: string | null }
  | { readonly kind: 'conflict' }
  | { readonly kind: 'session_not_found' }
  | { readonly kind: 'session_ended' }
  | { readonly kind: 'round_closed' }
  | { readonly kind: 'round_has_bet' }
  | { readonly kind: 'bet_not_found' }
  | { readonly kind: 'bet_already_refunded' }
  | { readonly kind: 'amount_mismatch' }
  /** A win or refund in another currency than its bet (contract 5.2). */
  | { readonly kind: 'currency_mismatch' }
  /** A win whose bet is still at the wallet or in doubt: nothing sent, repeat it later. */
  | { readonly kind: 'in_progress' }
  /** A win for a bet refused, refunded or rolled back; a refund of a bet that has a win. */
  | { readonly kind: 'bet_not_open' };

export interface SettleUpdate extends RecordUpdate {
  state: TransactionState;
  /** The change applies only while the record is in one of these states (guards against races). */
  expect: readonly TransactionState[];
  /** …and, when given, only while it has made exactly this many attempts (one run starts an attempt, not two). */
  expectAttempts?: number;
  /** For a state that is not final: when the sweeper should look for a job behind it. */
  nextCheckAt?: number;
  /** A refused call gives its round back: a failed bet no longer holds it, a failed closer no longer closes it. */
  releaseRound?: boolean;
  /** Also record this balance on the session. */
  sessionBalance?: string;
  /**
   * For a rollback that is a debit's compensation (or the refund standing in for it): the debit's
   * new state. The debit itself is never listed as dead: its compensation is what an operator redrives.
   */
  debitState?: TransactionState;
  /**
   * With debitState `compensated` from a compensation that found its debit never applied: the
   * debit is watched (wallet `status` asked again) until `until`, first at `firstCheckAt` (contract 5.4).
   */
  watchDebit?: { readonly until: number; readonly firstCheckAt: number };
  /** The wallet attempt this update records, for the attempt log (kept while the record is not final). */
  attempt?: AttemptLogEntry;
  /**
   * An engine refund's update that applies only while its bet is refused for good (failed, not
   * reclaimable): checked in the same step, since it says the refund has nothing to reverse.
   */
  onlyIfBetRefused?: boolean;
  /**
   * An engine refund's update that applies only while it stands in for its bet's compensation (the
   * bet `compensating`, naming it): checked in the same step, since it moves that bet.
   */
  onlyIfStandsIn?: boolean;
}

/** An operator's resolution of a dead record (no wallet call). */
export interface ResolveInput {
  readonly resolution: Resolution;
  /** The record's fields: its state (succeeded | failed), code, error, note. */
  readonly update: RecordUpdate;
  /** For a compensation: its debit's new state. */
  readonly debitState?: TransactionState;
  /** Written in the same step. */
  readonly audit: AuditEntry;
}

export type ResolveResult = { readonly kind: 'resolved' } | { readonly kind: 'not_dead'; readonly state: TransactionState | undefined };

/** What settle needs to find a record's round, session and debit without reading it first. */
export type RecordRef = Pick<
  TransactionRecord,
  'transactionId' | 'sessionId' | 'tokenRef' | 'playerId' | 'siteId' | 'walletRoundId' | 'referenceTransactionId'
>;

/**
 * What settle takes: the record's references, and its wallet body when the caller holds it (the
 * claimed record, or one read from Redis): a final settle then deletes the body's pieces in one
 * command. A body that is not the stored one costs commands, never correctness (includes/drop-body).
 */
export type SettleRef = RecordRef & { readonly walletBody?: string };

/** What names a record's shard: its id and its player. */
export type ShardRef = Pick<TransactionRecord, 'transactionId' | 'playerId' | 'siteId'>;

/** What a compensation's start needs of its debit (a claimed debit or a stored record). */
export type DebitRef = Pick<
  TransactionRecord,
  'transactionId' | 'walletBody' | 'sessionId' | 'tokenRef' | 'playerId' | 'siteId' | 'roundId' | 'walletRoundId' | 'currency'
>;

export interface CompensationStart {
  debit: DebitRef;
  /** What the engine was told about the debit. */
  error: TransactionError;
  attempts: number;
  lastWalletCode: number | null;
  history: readonly (number | 'unknown')[];
  compensation: NewTransaction;
  leaseUntil: number;
  /** A watched `compensated` debit the wallet now reports applied: a second compensation, no link. */
  late?: boolean;
  /**
   * A `compensating` debit whose stand-in, this engine refund, the wallet refused for good: the
   * debit's own compensation replaces it (only while the debit still names it), no link.
   */
  replacing?: string;
}

export type CompensationStartResult =
  | { readonly kind: 'created'; readonly compensationId: string }
  /** An engine refund of the same bet already went out; it stands in for the compensation. */
  | { readonly kind: 'linked'; readonly compensationId: string }
  | { readonly kind: 'not_pending'; readonly state: TransactionState | undefined };

/**
 * The plain part of the retry duty (src/duties/retry-policy.ts, decideRetry) as data, for the store's one-step retry start (begin-retry-3.lua):
 * a last answer that is unknown or one of these codes, with retries left, is retried after
 * delaysMs[n - 1]. Everything else (34/39, a final code, no retries left) is decided by
 * decideRetry itself.
 */
export interface RetryPlan {
  readonly plainRetryCodes: readonly number[];
  /** The delay before retry n at index n - 1, for n = 1..MAX_RETRIES. */
  readonly delaysMs: readonly number[];
  /** Codes that are evidence of an outage: after one (or an unknown outcome) a retry waits for a passed health check. */
  readonly outageCodes: readonly number[];
}

/** A worker's retry run, first step (begin-retry-3.lua). */
export interface BeginRetryInput {
  readonly now: number;
  /** False: only read (the wallet circuit breaker is not closed, so no attempt may start here). */
  readonly mayStart: boolean;
  readonly inFlightUntil: number;
  readonly nextCheckAt: number;
  readonly plan: RetryPlan;
  /**
   * When a wallet health check last passed (ms, 0: none): a record whose last try failed as an
   * outage would (unknown, an `outage` code) is only read unless one passed after that try.
   */
  readonly healthOkAt: number;
}

/**
 * `started`: the attempt was started as the worker's own settle would start it, and `record` is
 * the record from before that. `read`: nothing changed; the worker's own checks decide.
 */
export type BeginRetryResult = { readonly kind: 'started' | 'read'; readonly record: TransactionRecord };

export interface TransactionStore {
  /** How the records are sharded (by player); the index reads below take a shard. */
  readonly layout: ShardLayout;
  /** The shard of a record: its player's. */
  shardOf(record: Pick<TransactionRecord, 'playerId' | 'siteId'>): number;
  claim(input: ClaimInput): Promise<ClaimResult>;
  /**
   * Reads a record for a retry run (a job of `shard`'s queue) and, when nothing stands in the way,
   * starts its attempt; one round trip.
   */
  beginRetry(transactionId: string, shard: number, input: BeginRetryInput): Promise<BeginRetryResult | undefined>;
  /**
   * The record with this id. `shard` when the caller knows it (a job of that shard's queue, an
   * index of that shard); without it every shard is asked (a lookup by id alone).
   */
  get(transactionId: string, shard?: number): Promise<TransactionRecord | undefined>;
  /** Applies the update if the record is in an expected state; false if it was not. One round trip. */
  settle(record: SettleRef, update: SettleUpdate): Promise<boolean>;
  beginCompensation(start: CompensationStart): Promise<CompensationStartResult>;
  /** How many other credits/rollbacks of the record's round are not final yet. */
  openInRound(record: RecordRef): Promise<number>;
  /** Pending ids of one shard whose next check time has passed (the sweeper's work list). */
  dueForSweep(shard: number, now: number, limit: number): Promise<string[]>;
  /** Dead ids over all shards, newest death last (oldest first), a page of them and how many there are. */
  listDead(offset: number, limit: number): Promise<{ ids: string[]; total: number }>;
  /** Records pending (queued or at the wallet for a retry), over every shard. */
  countPending(): Promise<number>;
  /** Dead ids whose time of death is within [from, to], oldest first (over all shards), each with its shard. */
  deadBetween(from: number, to: number, limit: number): Promise<{ readonly transactionId: string; readonly shard: number }[]>;
  /** Resolves a record only while it is `dead`, releasing what it held, with its audit entry; one step. */
  resolve(record: RecordRef, input: ResolveInput): Promise<ResolveResult>;
  /** The record's wallet attempts, oldest first (empty once it settled for good). */
  attemptLog(record: ShardRef): Promise<AttemptLogEntry[]>;
  /** Watched debits of one shard whose next `status` check is due. */
  dueForRecheck(shard: number, now: number, limit: number): Promise<string[]>;
  /** The next `status` check of a watched debit. */
  recheckLater(debit: ShardRef, at: number): Promise<void>;
  /** Moves a record already in the sweeper's work list to a later look (never adds one). */
  sweepLater(record: ShardRef, at: number): Promise<void>;
}

/** What every script call of this store knows besides its input. */
interface StoreContext {
  readonly keys: Keys;
  readonly retentionSeconds: number;
  readonly now: number;
  /** Each change goes to the shard's ledger outbox too (contract 12). */
  readonly ledger: boolean;
}

/** The outbox key a script takes: the shard's, or the record's own key when no ledger is kept (the scripts then write none). */
const outboxOr = (keys: Keys, ledger: boolean, recordKey: string): string => (ledger ? keys.ledgerOutbox() : recordKey);

const roundKeyOf = (keys: Keys, r: Pick<TransactionRecord, 'playerId' | 'siteId' | 'walletRoundId'>): string =>
  keys.round(r.playerId, r.siteId, r.walletRoundId);

const claimScript = defineScript<StoreContext & ClaimInput>('claim-11', ({ keys, retentionSeconds, now, ledger, record, exactAmount, leaseUntil, sessionTtlSeconds, engineRequestId }) => ({
  keys: [
    keys.transaction(record.transactionId),
    roundKeyOf(keys, record),
    keys.session(record.sessionId),
    keys.pendingIndex(),
    keys.tokenPending(record.tokenRef),
    keys.token(record.tokenRef),
    keys.tokenSessions(record.tokenRef),
    keys.timeIndex(),
    keys.playerRecent(record.playerId, record.siteId),
    keys.transaction(record.referenceTransactionId ?? record.transactionId),
    outboxOr(keys, ledger, keys.transaction(record.transactionId)),
  ],
  args: [
    record.kind,
    record.bodyHash,
    String(leaseUntil),
    record.roundClosed ? '1' : '0',
    record.referenceTransactionId ?? '',
    record.roundId,
    exactAmount,
    String(retentionSeconds),
    record.transactionId,
    sessionTtlSeconds === undefined ? '' : String(sessionTtlSeconds),
    String(record.createdAt),
    String(PLAYER_RECENT_CAP),
    record.currency,
    RESERVED_ID_PREFIX,
    ledger ? (engineRequestId ?? '') : '',
    trimsIndexes(record.transactionId) ? '1' : '',
    ...claimRecordValues(record, now),
  ],
}), { packed: true });

/** The round's engine refund a debit refused for good may settle (settle-15), as the caller named it. */
interface RefundGuess {
  readonly id: string;
  readonly tokenRef: string;
}

/** A debit refused for good: nothing it took, so a dead engine refund of it is settled with it. */
const refusedForGood = (record: RecordRef, update: SettleUpdate): boolean =>
  record.referenceTransactionId === null && update.state === 'failed' && update.reclaimable !== true;

const settleScript = defineScript<StoreContext & { record: SettleRef; update: SettleUpdate; debitTokenRef: string; refund: RefundGuess | undefined }>('settle-15', ({ keys, retentionSeconds, now, ledger, record, update, debitTokenRef, refund }) => ({
  keys: [
    keys.transaction(record.transactionId),
    roundKeyOf(keys, record),
    keys.pendingIndex(),
    keys.tokenPending(record.tokenRef),
    keys.deadIndex(),
    keys.session(record.sessionId),
    keys.transaction(record.referenceTransactionId ?? record.transactionId),
    keys.recheckIndex(),
    keys.attemptLog(record.transactionId),
    keys.tokenWatch(debitTokenRef),
    keys.tokenPending(debitTokenRef),
    keys.transaction(refund?.id ?? record.transactionId),
    keys.attemptLog(refund?.id ?? record.transactionId),
    keys.tokenPending(refund?.tokenRef ?? record.tokenRef),
    outboxOr(keys, ledger, keys.transaction(record.transactionId)),
  ],
  args: [
    record.transactionId,
    update.state,
    FINAL_STATES.has(update.state) ? '1' : '0',
    update.releaseRound ? '1' : '0',
    String(retentionSeconds),
    String(update.nextCheckAt ?? now),
    update.sessionBalance ?? '',
    String(now),
    update.debitState ?? '',
    update.expect.join(','),
    update.expectAttempts === undefined ? '' : String(update.expectAttempts),
    update.watchDebit === undefined ? '' : String(update.watchDebit.until),
    update.watchDebit === undefined ? '' : String(update.watchDebit.firstCheckAt),
    update.attempt === undefined ? '' : encodeAttempt(update.attempt),
    String(ATTEMPT_LOG_CAP),
    debitTokenRef,
    update.onlyIfBetRefused === true ? 'bet-refused' : update.onlyIfStandsIn === true ? 'stands-in' : '',
    refusedForGood(record, update) ? '1' : '0',
    refund?.id ?? '',
    refund?.tokenRef ?? '',
    NOTHING_REVERSED_NOTE,
    String(bodyPieceCount(record.walletBody ?? '')),
    ...settleFields(update),
  ],
}), { packed: true });

const beginCompensationScript = defineScript<StoreContext & CompensationStart & { roundRollback: string }>('begin-compensation-11', ({ keys, retentionSeconds, now, ledger, roundRollback, ...start }) => {
  const debitFields = updateFields({ attempts: start.attempts, lastWalletCode: start.lastWalletCode, history: start.history, error: start.error }, now);
  return {
    keys: [
      keys.transaction(start.debit.transactionId),
      keys.transaction(start.compensation.transactionId),
      roundKeyOf(keys, start.debit),
      keys.pendingIndex(),
      keys.tokenPending(start.debit.tokenRef),
      keys.recheckIndex(),
      keys.timeIndex(),
      keys.playerRecent(start.debit.playerId, start.debit.siteId),
      keys.tokenWatch(start.debit.tokenRef),
      keys.transaction(roundRollback === '' ? start.compensation.transactionId : roundRollback),
      outboxOr(keys, ledger, keys.transaction(start.debit.transactionId)),
    ],
    args: [
      start.debit.transactionId,
      start.compensation.transactionId,
      String(start.leaseUntil),
      String(retentionSeconds),
      start.late ? 'compensated' : start.replacing !== undefined ? 'compensating' : 'pending',
      String(start.compensation.createdAt),
      String(PLAYER_RECENT_CAP),
      start.replacing ?? '',
      roundRollback,
      String(debitFields.length),
      ...debitFields,
      ...newRecordFields(start.compensation, now),
    ],
  };
});

const resolveScript = defineScript<StoreContext & { record: RecordRef; input: ResolveInput; debitTokenRef: string }>('resolve-11', ({ keys, retentionSeconds, now, ledger, record, input, debitTokenRef }) => {
  const fields = updateFields({ ...input.update, resolution: input.resolution }, now);
  return {
    keys: [
      keys.transaction(record.transactionId),
      roundKeyOf(keys, record),
      keys.pendingIndex(),
      keys.tokenPending(record.tokenRef),
      keys.deadIndex(),
      keys.transaction(record.referenceTransactionId ?? record.transactionId),
      keys.recheckIndex(),
      keys.attemptLog(record.transactionId),
      keys.audit(),
      keys.tokenPending(debitTokenRef),
      outboxOr(keys, ledger, keys.transaction(record.transactionId)),
    ],
    args: [
      record.transactionId,
      String(retentionSeconds),
      String(now),
      input.debitState ?? '',
      String(AUDIT_CAP),
      debitTokenRef,
      String(fields.length),
      ...fields,
      ...auditFields(input.audit),
    ],
  };
});

const beginRetryScript = defineScript<{ keys: Keys; ledger: boolean; transactionId: string } & BeginRetryInput>('begin-retry-3', ({ keys, ledger, transactionId, ...input }) => ({
  keys: [keys.transaction(transactionId), keys.pendingIndex(), outboxOr(keys, ledger, keys.transaction(transactionId))],
  args: [
    transactionId,
    String(input.now),
    input.mayStart ? '1' : '0',
    String(input.inFlightUntil),
    String(input.nextCheckAt),
    input.plan.plainRetryCodes.join(','),
    input.plan.delaysMs.join(','),
    input.plan.outageCodes.join(','),
    String(input.healthOkAt),
  ],
}), { packed: true });

const openInRoundScript = defineScript<{ keys: Keys; record: RecordRef }>('open-in-round-2', ({ keys, record }) => ({
  keys: [keys.transaction(record.transactionId), roundKeyOf(keys, record)],
  args: [],
}));

/**
 * Merges per-shard ZSET pages (member, score, member, score …; page k is shard k's) into one list
 * by score: a list over all shards reads each shard's first `count` and keeps the first `count` of
 * the merge.
 */
export function mergeByScore(pages: readonly (readonly string[])[], count: number): { transactionId: string; shard: number }[] {
  const all: { transactionId: string; shard: number; score: number }[] = [];
  pages.forEach((flat, shard) => {
    for (let i = 0; i + 1 < flat.length; i += 2) all.push({ transactionId: flat[i]!, shard, score: Number(flat[i + 1]) });
  });
  return all.sort((a, b) => a.score - b.score).slice(0, count).map(({ transactionId, shard }) => ({ transactionId, shard }));
}

/**
 * The money path's Redis steps as spans of their own, named, without their arguments (a claim holds
 * the wallet body, the token with it); with tracing off the store is left as it is.
 */
function withRedisSpans(store: TransactionStore): TransactionStore {
  if (!tracingOn()) return store;
  return Object.assign(store, {
    claim: spanned('redis claim', store.claim),
    settle: spanned('redis settle', store.settle),
    beginRetry: spanned('redis begin-retry', store.beginRetry),
    beginCompensation: spanned('redis begin-compensation', store.beginCompensation),
  });
}

/** `ledger`: every change also goes to the ledger's outbox (a ledger drains it; never without one, or it only grows). */
export function createTransactionStore(redis: RedisClient, layout: ShardLayout, retentionSeconds: number, clock: () => number = Date.now, ledger = false): TransactionStore {
  registerScripts(redis, [claimScript, settleScript, beginRetryScript, beginCompensationScript, openInRoundScript, resolveScript]);
  const shardOf = (r: Pick<TransactionRecord, 'playerId' | 'siteId'>): number => layout.shardOfPlayer(r.playerId, r.siteId);
  const keysOf = (r: Pick<TransactionRecord, 'playerId' | 'siteId'>): Keys => layout.keys(shardOf(r));
  /** A script's input with what every call knows; the spread last, as node 20's V8 adds keys after a spread through a runtime call. */
  const withContext = <I extends object>(keys: Keys, input: I): StoreContext & I => ({ keys, retentionSeconds, now: clock(), ledger, ...input });
  const onShards = <T>(read: (keys: Keys) => Promise<T>): Promise<T[]> => Promise.all(layout.all.map((shard) => read(layout.keys(shard))));

  async function get(transactionId: string, shard?: number): Promise<TransactionRecord | undefined> {
    if (shard !== undefined || layout.count === 1) return decodeRecord(await redis.hgetall(layout.keys(shard ?? 0).transaction(transactionId)));
    // A lookup by id alone: every shard in parallel (one command per shard, pipelined per master).
    const found = await onShards(async (keys) => decodeRecord(await redis.hgetall(keys.transaction(transactionId))));
    return found.find((r) => r !== undefined);
  }

  return withRedisSpans({
    layout,
    shardOf,

    async claim(input) {
      const reply = (await runScript(redis, claimScript, withContext(keysOf(input.record), input))) as (string | null)[];
      const [kind, balance, ...rest] = reply as [string, string | null, ...string[]];
      if (kind === 'duplicate') return { kind, record: decodeRecord(pairsToObject(rest))!, sessionBalance: balance };
      if (kind === 'claimed' || kind === 'deferred') return { kind, sessionBalance: balance ?? '0' };
      return { kind } as ClaimResult;
    },

    async beginRetry(transactionId, shard, input) {
      const [kind, ...rest] = (await runScript(redis, beginRetryScript, { keys: layout.keys(shard), ledger, transactionId, ...input })) as string[];
      const record = kind === undefined ? undefined : decodeRecord(pairsToObject(rest));
      return record === undefined ? undefined : { kind: kind as BeginRetryResult['kind'], record };
    },

    get,

    async settle(record, update) {
      // The debit a rollback moves holds its own token, usually the rollback's: asked again with
      // the token the script names when it is another (an engine refund made on another token).
      // A debit refused for good names its round's engine refund, as the script answers it: read,
      // then asked again (the round's refund is set once, so this settles within a few asks).
      let debitTokenRef = record.tokenRef;
      let refund: RefundGuess | undefined;
      for (let tries = 0; tries < 4; tries += 1) {
        const reply = await runScript(redis, settleScript, withContext(keysOf(record), { record, update, debitTokenRef, refund }));
        if (!Array.isArray(reply)) return reply === 1;
        const [kind, value] = reply as [string, string];
        if (kind === 'token') debitTokenRef = value;
        else if (kind === 'refund') refund = { id: value, tokenRef: (await get(value, shardOf(record)))?.tokenRef ?? record.tokenRef };
        else refund = { id: refund?.id ?? '', tokenRef: value };
      }
      throw new Error(`the settle of ${record.transactionId} kept naming other keys`);
    },

    async beginCompensation(start) {
      // An engine refund of the debit already in its round stands in for the compensation: the
      // script reads it, so it is named first (no round read while the first guess holds).
      let [kind, value] = (await runScript(redis, beginCompensationScript, withContext(keysOf(start.debit), Object.assign({ roundRollback: '' }, start)))) as [string, string];
      for (let tries = 0; kind === 'reread' && tries < 3; tries += 1) {
        [kind, value] = (await runScript(redis, beginCompensationScript, withContext(keysOf(start.debit), Object.assign({ roundRollback: value }, start)))) as [string, string];
      }
      if (kind === 'reread') throw new Error(`the round of ${start.debit.transactionId} kept changing its rollback`);
      if (kind === 'not_pending') return { kind, state: (value || undefined) as TransactionState | undefined };
      return { kind: kind as 'created' | 'linked', compensationId: value };
    },

    async resolve(record, input) {
      let [kind, state] = (await runScript(redis, resolveScript, withContext(keysOf(record), { record, input, debitTokenRef: record.tokenRef }))) as [string, string?];
      if (kind === 'token') [kind, state] = (await runScript(redis, resolveScript, withContext(keysOf(record), { record, input, debitTokenRef: state ?? '' }))) as [string, string?];
      if (kind === 'resolved') return { kind };
      return { kind: 'not_dead', state: (state || undefined) as TransactionState | undefined };
    },

    async attemptLog(record) {
      return (await redis.lrange(keysOf(record).attemptLog(record.transactionId), 0, -1)).map(decodeAttempt);
    },

    async openInRound(record) {
      return Number(await runScript(redis, openInRoundScript, { keys: keysOf(record), record }));
    },

    async dueForSweep(shard, now, limit) {
      return redis.zrangebyscore(layout.keys(shard).pendingIndex(), '-inf', String(now), 'LIMIT', 0, limit);
    },

    async dueForRecheck(shard, now, limit) {
      return redis.zrangebyscore(layout.keys(shard).recheckIndex(), '-inf', String(now), 'LIMIT', 0, limit);
    },

    async recheckLater(debit, at) {
      await redis.zadd(keysOf(debit).recheckIndex(), 'XX', at, debit.transactionId);
    },

    async sweepLater(record, at) {
      await redis.zadd(keysOf(record).pendingIndex(), 'XX', 'GT', at, record.transactionId);
    },

    async deadBetween(from, to, limit) {
      const pages = await onShards((keys) => redis.zrangebyscore(keys.deadIndex(), String(from), String(to), 'WITHSCORES', 'LIMIT', 0, limit));
      return mergeByScore(pages, limit);
    },

    async listDead(offset, limit) {
      const [pages, totals] = await Promise.all([
        onShards((keys) => redis.zrange(keys.deadIndex(), 0, offset + limit - 1, 'WITHSCORES')),
        onShards((keys) => redis.zcard(keys.deadIndex())),
      ]);
      return { ids: mergeByScore(pages, offset + limit).slice(offset).map((e) => e.transactionId), total: totals.reduce((a, b) => a + b, 0) };
    },

    async countPending() {
      return (await onShards((keys) => redis.zcard(keys.pendingIndex()))).reduce((a, b) => a + b, 0);
    },
  });
}
