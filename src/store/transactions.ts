import type Redis from 'ioredis';
import type { Operation } from '../wallet/protocol';
import type { Keys } from './keys';
import { luaScript } from './redis';
import {
  FINAL_STATES,
  type TransactionError,
  type TransactionKind,
  type TransactionRecord,
  type TransactionState,
} from './types';

/**
 * Transaction records, rounds and the pending index in Redis. Every change that must be atomic is
 * one Lua script, so the hot path costs one round trip to claim and one to settle.
 */

export type NewTransaction = Omit<
  TransactionRecord,
  'state' | 'attempts' | 'lastWalletCode' | 'history' | 'balance' | 'compensationId' | 'error' | 'note' | 'updatedAt' | 'deferred' | 'inFlightUntil'
>;

export interface ClaimInput {
  record: NewTransaction;
  /** Exact minor units of the amount at the currency's scale (compares a refund with its bet). */
  amountMinor: string;
  /** Until then the claimer owns the first attempt; after it, the sweeper may take over. */
  leaseUntil: number;
  /**
   * Renew the session's sliding expiry to this many seconds when the claim goes through (an
   * `ending` session keeps having none), in the same round trip.
   */
  sessionTtlSeconds?: number;
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
  | { readonly kind: 'amount_mismatch' };

export interface SettleUpdate {
  state: TransactionState;
  /** The change applies only while the record is in one of these states (guards against races). */
  expect: readonly TransactionState[];
  /** …and, when given, only while it has made exactly this many attempts (one run starts an attempt, not two). */
  expectAttempts?: number;
  inFlightUntil?: number | null;
  attempts?: number;
  lastWalletCode?: number | null;
  history?: readonly (number | 'unknown')[];
  balance?: string | null;
  error?: TransactionError | null;
  note?: string | null;
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
}

/** What settle needs to find a record's round, session and debit without reading it first. */
export type RecordRef = Pick<
  TransactionRecord,
  'transactionId' | 'sessionId' | 'tokenRef' | 'playerId' | 'siteId' | 'walletRoundId' | 'referenceTransactionId'
>;

export interface CompensationStart {
  debit: TransactionRecord;
  /** What the engine was told about the debit. */
  error: TransactionError;
  attempts: number;
  lastWalletCode: number | null;
  history: readonly (number | 'unknown')[];
  compensation: NewTransaction;
  leaseUntil: number;
}

export type CompensationStartResult =
  | { readonly kind: 'created'; readonly compensationId: string }
  /** An engine refund of the same bet already went out; it stands in for the compensation. */
  | { readonly kind: 'linked'; readonly compensationId: string }
  | { readonly kind: 'not_pending'; readonly state: TransactionState | undefined };

export interface TransactionStore {
  claim(input: ClaimInput): Promise<ClaimResult>;
  get(transactionId: string): Promise<TransactionRecord | undefined>;
  /** Applies the update if the record is in an expected state; false if it was not. One round trip. */
  settle(record: RecordRef, update: SettleUpdate): Promise<boolean>;
  beginCompensation(start: CompensationStart): Promise<CompensationStartResult>;
  /** How many other credits/rollbacks of the record's round are not final yet. */
  openInRound(record: RecordRef): Promise<number>;
  /** Pending ids whose next check time has passed (the sweeper's work list). */
  dueForSweep(now: number, limit: number): Promise<string[]>;
  listDead(offset: number, limit: number): Promise<{ ids: string[]; total: number }>;
}

const RECORD_FIELDS = {
  transactionId: 'id',
  kind: 'kind',
  state: 'state',
  sessionId: 'session_id',
  tokenRef: 'token_ref',
  playerId: 'player_id',
  siteId: 'site_id',
  roundId: 'round_id',
  walletRoundId: 'wallet_round_id',
  amount: 'amount',
  currency: 'currency',
  roundClosed: 'round_closed',
  referenceTransactionId: 'reference_id',
  bodyHash: 'body_hash',
  walletOperation: 'op',
  walletBody: 'body',
  attempts: 'attempts',
  lastWalletCode: 'last_code',
  history: 'history',
  balance: 'balance',
  compensationId: 'compensation_id',
  isCompensation: 'is_compensation',
  deferred: 'deferred',
  inFlightUntil: 'in_flight_until',
  error: 'error',
  note: 'note',
  createdAt: 'created_at',
  updatedAt: 'updated_at',
} as const satisfies Record<keyof TransactionRecord, string>;

function encodeHistory(history: readonly (number | 'unknown')[]): string {
  return history.map((r) => (r === 'unknown' ? 'u' : String(r))).join(',');
}

function decodeHistory(text: string | undefined): (number | 'unknown')[] {
  if (!text) return [];
  return text.split(',').map((r) => (r === 'u' ? 'unknown' : Number(r)));
}

/**
 * Redis keeps a hash as a compact listpack only while every value is at most
 * hash-max-listpack-value bytes (64 by default); one longer value turns the whole record into a
 * hashtable, about 3× the memory (measured: 3.3 KB vs 1.0 KB for a settled bet). The wallet body
 * (~300 bytes, the only long value) is therefore stored in pieces of at most 64 bytes under
 * `body`, `body1`, `body2`, …, cut between characters so each piece is valid UTF-8 on its own,
 * and joined again on read: the same bytes every retry.
 */
const BODY_PIECE_BYTES = 64;

/** Appends the body's pieces as field/value pairs to `out`. */
function pushBodyPieces(out: string[], body: string): void {
  // Pure ASCII (every wallet body the gateway writes): bytes are characters, cut every 64.
  const ascii = Buffer.byteLength(body, 'utf8') === body.length;
  let piece = 0;
  let start = 0;
  while (start < body.length || piece === 0) {
    let end = Math.min(body.length, start + BODY_PIECE_BYTES);
    // Shorten until it fits in bytes (only non-ASCII text is longer in bytes than in characters),
    // never ending between the two halves of a surrogate pair.
    while (
      !ascii &&
      end > start + 1 &&
      (Buffer.byteLength(body.slice(start, end), 'utf8') > BODY_PIECE_BYTES || (end < body.length && isHighSurrogate(body.charCodeAt(end - 1))))
    ) {
      end -= 1;
    }
    out.push(piece === 0 ? RECORD_FIELDS.walletBody : `${RECORD_FIELDS.walletBody}${piece}`, body.slice(start, end));
    piece += 1;
    start = end;
  }
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** '' once the record settled for good (succeeded, failed, compensated): SETTLE drops the body then. */
function joinBody(h: Record<string, string>): string {
  let body = h[RECORD_FIELDS.walletBody] ?? '';
  for (let piece = 1; h[`${RECORD_FIELDS.walletBody}${piece}`] !== undefined; piece += 1) body += h[`${RECORD_FIELDS.walletBody}${piece}`];
  return body;
}

function orNull(value: string | undefined): string | null {
  return value === undefined || value === '' ? null : value;
}

function parseError(text: string | undefined): TransactionError | null {
  return text ? (JSON.parse(text) as TransactionError) : null;
}

export function decodeRecord(h: Record<string, string>): TransactionRecord | undefined {
  if (h.id === undefined) return undefined;
  const f = RECORD_FIELDS;
  return {
    transactionId: h[f.transactionId]!,
    kind: h[f.kind] as TransactionKind,
    state: h[f.state] as TransactionState,
    sessionId: h[f.sessionId] ?? '',
    tokenRef: h[f.tokenRef] ?? '',
    playerId: h[f.playerId] ?? '',
    siteId: h[f.siteId] ?? '',
    roundId: h[f.roundId] ?? '',
    walletRoundId: h[f.walletRoundId] ?? '',
    amount: h[f.amount] ?? '0',
    currency: h[f.currency] ?? '',
    roundClosed: h[f.roundClosed] === '1',
    referenceTransactionId: orNull(h[f.referenceTransactionId]),
    bodyHash: h[f.bodyHash] ?? '',
    walletOperation: h[f.walletOperation] as Operation,
    walletBody: joinBody(h),
    attempts: Number(h[f.attempts] ?? 0),
    lastWalletCode: h[f.lastWalletCode] ? Number(h[f.lastWalletCode]) : null,
    history: decodeHistory(h[f.history]),
    balance: orNull(h[f.balance]),
    compensationId: orNull(h[f.compensationId]),
    isCompensation: h[f.isCompensation] === '1',
    deferred: h[f.deferred] === '1',
    inFlightUntil: h[f.inFlightUntil] ? Number(h[f.inFlightUntil]) : null,
    error: parseError(h[f.error]),
    note: orNull(h[f.note]),
    createdAt: Number(h[f.createdAt] ?? 0),
    updatedAt: Number(h[f.updatedAt] ?? 0),
  };
}

/** A new record as HSET field/value pairs (built as the flat list the scripts take). */
function newRecordFields(r: NewTransaction, now: number): string[] {
  const f = RECORD_FIELDS;
  const out = [
    f.transactionId, r.transactionId,
    f.kind, r.kind,
    f.state, 'pending',
    f.sessionId, r.sessionId,
    f.tokenRef, r.tokenRef,
    f.playerId, r.playerId,
    f.siteId, r.siteId,
    f.roundId, r.roundId,
    f.walletRoundId, r.walletRoundId,
    f.amount, r.amount,
    f.currency, r.currency,
    f.roundClosed, r.roundClosed ? '1' : '0',
    f.referenceTransactionId, r.referenceTransactionId ?? '',
    f.bodyHash, r.bodyHash,
    f.walletOperation, r.walletOperation,
    f.attempts, '0',
    f.history, '',
    f.isCompensation, r.isCompensation ? '1' : '0',
    f.deferred, '0',
    // Counted in its round's `open` while not final (credits and rollbacks only; set by the scripts).
    'in_round', '0',
    f.createdAt, String(r.createdAt),
    f.updatedAt, String(now),
  ];
  pushBodyPieces(out, r.walletBody);
  return out;
}

/** The fields an update sets, as HSET field/value pairs. */
function updateFields(u: Partial<SettleUpdate>, now: number): string[] {
  const f = RECORD_FIELDS;
  const out: string[] = [f.updatedAt, String(now)];
  if (u.state !== undefined) out.push(f.state, u.state);
  if (u.attempts !== undefined) out.push(f.attempts, String(u.attempts));
  if (u.lastWalletCode !== undefined) out.push(f.lastWalletCode, u.lastWalletCode === null ? '' : String(u.lastWalletCode));
  if (u.history !== undefined) out.push(f.history, encodeHistory(u.history));
  if (u.balance !== undefined) out.push(f.balance, u.balance ?? '');
  if (u.error !== undefined) out.push(f.error, u.error === null ? '' : JSON.stringify(u.error));
  if (u.note !== undefined) out.push(f.note, u.note ?? '');
  if (u.inFlightUntil !== undefined) out.push(f.inFlightUntil, u.inFlightUntil === null ? '' : String(u.inFlightUntil));
  return out;
}

// KEYS: tx, round, session, pending index, token-pending
// ARGV: kind, body_hash, lease_until, round_closed, reference id, engine round id, amount minor,
//       retention seconds, tx id, session ttl seconds ('' = leave the expiry), then the record's
//       field/value pairs
// Replies: {kind} for a refusal; {'claimed'|'deferred', session balance};
//          {'duplicate', session balance or nil, record field/value pairs...}
const CLAIM = `
local existing = redis.call('HGET', KEYS[1], 'body_hash')
if existing then
  if existing ~= ARGV[2] then return {'conflict'} end
  local rec = redis.call('HGETALL', KEYS[1])
  table.insert(rec, 1, redis.call('HGET', KEYS[3], 'balance'))
  table.insert(rec, 1, 'duplicate')
  return rec
end
local session = redis.call('HMGET', KEYS[3], 'state', 'balance')
local sstate = session[1]
if not sstate then return {'session_not_found'} end
local kind = ARGV[1]
if sstate == 'ended' or (kind == 'debit' and sstate ~= 'open') then return {'session_ended'} end
local round = redis.call('HMGET', KEYS[2], 'bet', 'bet_round', 'bet_amount', 'closed_by', 'rollback', 'open')
if round[4] then return {'round_closed'} end
if kind == 'debit' then
  if round[1] then return {'round_has_bet'} end
elseif kind == 'credit' then
  if round[1] ~= ARGV[5] or round[2] ~= ARGV[6] then return {'bet_not_found'} end
else
  if round[5] then return {'bet_already_refunded'} end
  if round[1] == ARGV[5] and round[3] ~= ARGV[7] then return {'amount_mismatch'} end
end
local fields = {}
for i = 11, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[1], unpack(fields))
redis.call('ZADD', KEYS[4], ARGV[3], ARGV[9])
redis.call('SADD', KEYS[5], ARGV[9])
-- A call that closes the round must not overtake earlier credits/rollbacks still pending in it:
-- the wallet would refuse their retries once the round is closed.
local deferred = kind ~= 'debit' and ARGV[4] == '1' and tonumber(round[6] or '0') > 0
if kind ~= 'debit' then
  redis.call('HINCRBY', KEYS[2], 'open', 1)
  redis.call('HSET', KEYS[1], 'in_round', '1')
end
if deferred then redis.call('HSET', KEYS[1], 'deferred', '1') end
if kind == 'debit' then
  redis.call('HSET', KEYS[2], 'bet', ARGV[9], 'bet_round', ARGV[6], 'bet_amount', ARGV[7])
elseif kind == 'rollback' then
  redis.call('HSET', KEYS[2], 'rollback', ARGV[9])
end
if ARGV[4] == '1' then redis.call('HSET', KEYS[2], 'closed_by', ARGV[9]) end
redis.call('EXPIRE', KEYS[2], ARGV[8])
-- The session's sliding expiry, as sessions.touch renews it (an ending session has none).
if ARGV[10] ~= '' and sstate ~= 'ending' then redis.call('EXPIRE', KEYS[3], ARGV[10]) end
local balance = session[2] or '0'
if deferred then return {'deferred', balance} end
return {'claimed', balance}
`;

// A final record expires after the retention, but a dead one stays until an operator acted.
// Whatever gets the retention expiry can never be sent again, so its wallet body (`body`,
// `body1`, …; ~a third of the record) goes in the same step; a dead record keeps it for a
// redrive and the dead-check, a pending or compensating one for its retries and compensation.
// KEYS: tx, round, pending index, token-pending, dead index, session, referenced debit
// ARGV: tx id, state, final, release round, retention seconds, next check at, session balance,
//       now, debit state, expected states (comma separated), expected attempts ('' = any),
//       then field/value pairs
const SETTLE = `
local function dropBody(key)
  if redis.call('HDEL', key, 'body') == 0 then return end
  local piece = 1
  while redis.call('HDEL', key, 'body' .. piece) == 1 do piece = piece + 1 end
end
local current = redis.call('HGET', KEYS[1], 'state')
if not current then return 0 end
if not string.find(',' .. ARGV[10] .. ',', ',' .. current .. ',', 1, true) then return 0 end
if ARGV[11] ~= '' and redis.call('HGET', KEYS[1], 'attempts') ~= ARGV[11] then return 0 end
local fields = {}
for i = 12, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[1], unpack(fields))
local id = ARGV[1]
local inRound = redis.call('HGET', KEYS[1], 'in_round')
local roundExists = redis.call('EXISTS', KEYS[2]) == 1
if ARGV[3] == '1' then
  if inRound == '1' then
    redis.call('HSET', KEYS[1], 'in_round', '0')
    if roundExists then redis.call('HINCRBY', KEYS[2], 'open', -1) end
  end
  redis.call('ZREM', KEYS[3], id)
  redis.call('SREM', KEYS[4], id)
  if ARGV[2] == 'dead' then
    redis.call('PERSIST', KEYS[1])
    redis.call('ZADD', KEYS[5], ARGV[8], id)
  else
    redis.call('EXPIRE', KEYS[1], ARGV[5])
    redis.call('ZREM', KEYS[5], id)
    dropBody(KEYS[1])
  end
else
  redis.call('PERSIST', KEYS[1])
  redis.call('ZADD', KEYS[3], ARGV[6], id)
  redis.call('ZREM', KEYS[5], id)
  redis.call('SADD', KEYS[4], id)
  if inRound == '0' and redis.call('HGET', KEYS[1], 'kind') ~= 'debit' then
    redis.call('HSET', KEYS[1], 'in_round', '1')
    if roundExists then redis.call('HINCRBY', KEYS[2], 'open', 1) end
  end
end
if ARGV[4] == '1' then
  local r = redis.call('HMGET', KEYS[2], 'bet', 'closed_by', 'rollback')
  if r[1] == id then redis.call('HDEL', KEYS[2], 'bet', 'bet_round', 'bet_amount') end
  if r[2] == id then redis.call('HDEL', KEYS[2], 'closed_by') end
  if r[3] == id then redis.call('HDEL', KEYS[2], 'rollback') end
end
if ARGV[7] ~= '' and redis.call('EXISTS', KEYS[6]) == 1 then
  redis.call('HSET', KEYS[6], 'balance', ARGV[7])
end
if ARGV[9] ~= '' and redis.call('HGET', KEYS[7], 'compensation_id') == id then
  redis.call('HSET', KEYS[7], 'state', ARGV[9], 'updated_at', ARGV[8])
  if ARGV[9] == 'compensating' or ARGV[9] == 'dead' then
    redis.call('PERSIST', KEYS[7])
  else
    redis.call('EXPIRE', KEYS[7], ARGV[5])
    dropBody(KEYS[7])
  end
end
return 1
`;

// KEYS: debit, compensation, round, pending index, token-pending
// ARGV: debit id, compensation id, lease until, retention seconds, n debit field/value pairs (count),
//       then debit pairs, then compensation pairs
const BEGIN_COMPENSATION = `
local state = redis.call('HGET', KEYS[1], 'state')
if state ~= 'pending' then return {'not_pending', state or ''} end
local n = tonumber(ARGV[5])
local debitFields, compFields = {}, {}
for i = 6, 5 + n do debitFields[#debitFields + 1] = ARGV[i] end
for i = 6 + n, #ARGV do compFields[#compFields + 1] = ARGV[i] end
local rollback = redis.call('HGET', KEYS[3], 'rollback')
local compId = ARGV[2]
local result = 'created'
if rollback and rollback ~= compId then
  compId = rollback
  result = 'linked'
end
redis.call('HSET', KEYS[1], unpack(debitFields))
redis.call('HSET', KEYS[1], 'state', 'compensating', 'compensation_id', compId)
redis.call('PERSIST', KEYS[1])
redis.call('ZREM', KEYS[4], ARGV[1])
redis.call('SREM', KEYS[5], ARGV[1])
if result == 'created' and redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('HSET', KEYS[2], unpack(compFields))
  redis.call('ZADD', KEYS[4], ARGV[3], compId)
  redis.call('SADD', KEYS[5], compId)
  redis.call('HSET', KEYS[2], 'in_round', '1')
  redis.call('HINCRBY', KEYS[3], 'open', 1)
  redis.call('HSET', KEYS[3], 'rollback', compId, 'closed_by', compId)
  redis.call('EXPIRE', KEYS[3], ARGV[4])
end
return {result, compId}
`;

// KEYS: tx, round. The other not-final credits/rollbacks of the round.
const OPEN_IN_ROUND = `
local open = tonumber(redis.call('HGET', KEYS[2], 'open') or '0')
if redis.call('HGET', KEYS[1], 'in_round') == '1' then open = open - 1 end
return open
`;

const claimScript = luaScript(CLAIM);
const settleScript = luaScript(SETTLE);
const beginCompensationScript = luaScript(BEGIN_COMPENSATION);
const openInRoundScript = luaScript(OPEN_IN_ROUND);

function pairsToObject(flat: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) out[flat[i]!] = flat[i + 1]!;
  return out;
}

export function createTransactionStore(redis: Redis, keys: Keys, retentionSeconds: number, clock: () => number = Date.now): TransactionStore {
  const roundKey = (r: Pick<TransactionRecord, 'playerId' | 'siteId' | 'walletRoundId'>): string =>
    keys.round(r.playerId, r.siteId, r.walletRoundId);

  return {
    async claim({ record, amountMinor, leaseUntil, sessionTtlSeconds }) {
      const reply = (await claimScript(
        redis,
        5,
        keys.transaction(record.transactionId),
        roundKey(record),
        keys.session(record.sessionId),
        keys.pendingIndex(),
        keys.tokenPending(record.tokenRef),
        record.kind,
        record.bodyHash,
        String(leaseUntil),
        record.roundClosed ? '1' : '0',
        record.referenceTransactionId ?? '',
        record.roundId,
        amountMinor,
        String(retentionSeconds),
        record.transactionId,
        sessionTtlSeconds === undefined ? '' : String(sessionTtlSeconds),
        ...newRecordFields(record, clock()),
      )) as (string | null)[];
      const [kind, balance, ...rest] = reply as [string, string | null, ...string[]];
      if (kind === 'duplicate') return { kind, record: decodeRecord(pairsToObject(rest))!, sessionBalance: balance };
      if (kind === 'claimed' || kind === 'deferred') return { kind, sessionBalance: balance ?? '0' };
      return { kind } as ClaimResult;
    },

    async get(transactionId) {
      return decodeRecord(await redis.hgetall(keys.transaction(transactionId)));
    },

    async settle(record, update) {
      const { transactionId } = record;
      const now = clock();
      const final = FINAL_STATES.has(update.state);
      const applied = await settleScript(
        redis,
        7,
        keys.transaction(transactionId),
        roundKey(record),
        keys.pendingIndex(),
        keys.tokenPending(record.tokenRef),
        keys.deadIndex(),
        keys.session(record.sessionId),
        keys.transaction(record.referenceTransactionId ?? transactionId),
        transactionId,
        update.state,
        final ? '1' : '0',
        update.releaseRound ? '1' : '0',
        String(retentionSeconds),
        String(update.nextCheckAt ?? now),
        update.sessionBalance ?? '',
        String(now),
        update.debitState ?? '',
        update.expect.join(','),
        update.expectAttempts === undefined ? '' : String(update.expectAttempts),
        ...updateFields(update, now),
      );
      return applied === 1;
    },

    async beginCompensation(start) {
      const now = clock();
      const debitFields = updateFields({ attempts: start.attempts, lastWalletCode: start.lastWalletCode, history: start.history, error: start.error }, now);
      const compFields = newRecordFields(start.compensation, now);
      const reply = (await beginCompensationScript(
        redis,
        5,
        keys.transaction(start.debit.transactionId),
        keys.transaction(start.compensation.transactionId),
        roundKey(start.debit),
        keys.pendingIndex(),
        keys.tokenPending(start.debit.tokenRef),
        start.debit.transactionId,
        start.compensation.transactionId,
        String(start.leaseUntil),
        String(retentionSeconds),
        String(debitFields.length),
        ...debitFields,
        ...compFields,
      )) as [string, string];
      const [kind, value] = reply;
      if (kind === 'not_pending') return { kind, state: (value || undefined) as TransactionState | undefined };
      return { kind: kind as 'created' | 'linked', compensationId: value };
    },

    async openInRound(record) {
      return Number(await openInRoundScript(redis, 2, keys.transaction(record.transactionId), roundKey(record)));
    },

    async dueForSweep(now, limit) {
      return redis.zrangebyscore(keys.pendingIndex(), '-inf', String(now), 'LIMIT', 0, limit);
    },

    async listDead(offset, limit) {
      const [ids, total] = await Promise.all([
        redis.zrange(keys.deadIndex(), offset, offset + limit - 1),
        redis.zcard(keys.deadIndex()),
      ]);
      return { ids, total };
    },
  };
}
