import type { Operation } from '../wallet/protocol';
import type { AttemptLogEntry, NewTransaction, Resolution, TransactionError, TransactionKind, TransactionRecord, TransactionState } from './types';

/**
 * A transaction record as a Redis hash: short field names, the wallet body in listpack-sized
 * pieces, the attempt history as one text. The scripts (./lua) take records as flat field/value
 * pairs built here, and every read decodes through here.
 *
 * An empty value means "absent": a new record leaves such fields out, an update's empty value
 * deletes the field (includes/set-fields.lua), flags are '1' or absent, and the decoder reads an
 * absent field and an empty one alike (records written with '' and '0' read the same). Each field
 * left out is ~10–30 bytes of a ~500-byte listpack.
 */

/** The record fields an update may set. */
export type RecordUpdate = Partial<
  Pick<TransactionRecord, 'state' | 'attempts' | 'lastWalletCode' | 'history' | 'balance' | 'error' | 'note' | 'inFlightUntil' | 'queued' | 'reclaimable' | 'resolution'>
>;

export const RECORD_FIELDS = {
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
  queued: 'queued',
  reclaimable: 'reclaim',
  inFlightUntil: 'in_flight_until',
  recheckUntil: 'recheck_until',
  error: 'error',
  resolution: 'resolution',
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

/** Where each of the body's pieces ends (one empty piece for an empty body). */
function pieceEnds(body: string): number[] {
  // Pure ASCII (every wallet body the gateway writes): bytes are characters, cut every 64.
  const ascii = Buffer.byteLength(body, 'utf8') === body.length;
  const ends: number[] = [];
  let start = 0;
  while (start < body.length || ends.length === 0) {
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
    ends.push(end);
    start = end;
  }
  return ends;
}

/** Appends the body's pieces as field/value pairs to `out`. */
function pushBodyPieces(out: string[], body: string): void {
  let start = 0;
  pieceEnds(body).forEach((end, piece) => {
    out.push(piece === 0 ? RECORD_FIELDS.walletBody : `${RECORD_FIELDS.walletBody}${piece}`, body.slice(start, end));
    start = end;
  });
}

/** How many pieces a stored record holds its wallet body in (0: an empty body, none stored). */
export function bodyPieceCount(body: string): number {
  return body === '' ? 0 : pieceEnds(body).length;
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

/** A flag as stored: '1', or '' (absent). */
function flag(value: boolean): string {
  return value ? '1' : '';
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
    queued: h[f.queued] === '1',
    reclaimable: h[f.reclaimable] === '1',
    inFlightUntil: h[f.inFlightUntil] ? Number(h[f.inFlightUntil]) : null,
    recheckUntil: h[f.recheckUntil] ? Number(h[f.recheckUntil]) : null,
    error: parseError(h[f.error]),
    resolution: orNull(h[f.resolution]) as Resolution | null,
    note: orNull(h[f.note]),
    createdAt: Number(h[f.createdAt] ?? 0),
    updatedAt: Number(h[f.updatedAt] ?? 0),
  };
}

/** A new record as HSET field/value pairs (built as the flat list the scripts take). */
export function newRecordFields(r: NewTransaction, now: number): string[] {
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
    f.roundClosed, flag(r.roundClosed),
    f.referenceTransactionId, r.referenceTransactionId ?? '',
    f.bodyHash, r.bodyHash,
    f.walletOperation, r.walletOperation,
    // The scripts compare `attempts` and `in_round` with '0': both are always stored.
    f.attempts, '0',
    f.isCompensation, flag(r.isCompensation),
    // Counted in its round's `open` while not final (credits and rollbacks only; set by the scripts).
    'in_round', '0',
    f.createdAt, String(r.createdAt),
    f.updatedAt, String(now),
  ];
  pushBodyPieces(out, r.walletBody);
  return withoutEmpty(out);
}

/**
 * A new record as the claim's script takes it (claim-11.lua, ARGV [17..]): the values that are
 * always there in a fixed order, their field names kept in the script, then the record's other
 * fields as pairs (the flags that are set, the reference id, the body's pieces). The values the
 * claim names anyway (id, kind, round id, body hash, currency, created at) are not repeated. The
 * script stores what newRecordFields lays out, so every reader and every release's script reads
 * one layout; the fixed values are never empty for a claim (a session's, a parsed engine call's).
 */
export function claimRecordValues(r: NewTransaction, now: number): string[] {
  const f = RECORD_FIELDS;
  const out = [r.sessionId, r.tokenRef, r.playerId, r.siteId, r.walletRoundId, r.amount, r.walletOperation, String(now)];
  if (r.roundClosed) out.push(f.roundClosed, '1');
  if (r.referenceTransactionId) out.push(f.referenceTransactionId, r.referenceTransactionId);
  if (r.isCompensation) out.push(f.isCompensation, '1');
  if (r.walletBody !== '') pushBodyPieces(out, r.walletBody);
  return out;
}

/** The pairs whose value is not empty: a new record has nothing to delete. */
function withoutEmpty(pairs: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < pairs.length; i += 2) if (pairs[i + 1] !== '') out.push(pairs[i]!, pairs[i + 1]!);
  return out;
}

/** The fields an update sets, as HSET field/value pairs. */
export function updateFields(u: RecordUpdate, now: number): string[] {
  const out: string[] = [RECORD_FIELDS.updatedAt, String(now)];
  if (u.state !== undefined) out.push(RECORD_FIELDS.state, u.state);
  return pushUpdate(out, u);
}

/** The fields an update sets besides its time and state, which the settle's script writes from its own arguments (settle-15.lua). */
export function settleFields(u: RecordUpdate): string[] {
  return pushUpdate([], u);
}

function pushUpdate(out: string[], u: RecordUpdate): string[] {
  const f = RECORD_FIELDS;
  if (u.attempts !== undefined) out.push(f.attempts, String(u.attempts));
  if (u.lastWalletCode !== undefined) out.push(f.lastWalletCode, u.lastWalletCode === null ? '' : String(u.lastWalletCode));
  if (u.history !== undefined) out.push(f.history, encodeHistory(u.history));
  if (u.balance !== undefined) out.push(f.balance, u.balance ?? '');
  if (u.error !== undefined) out.push(f.error, u.error === null ? '' : JSON.stringify(u.error));
  if (u.note !== undefined) out.push(f.note, u.note ?? '');
  if (u.queued !== undefined) out.push(f.queued, flag(u.queued));
  if (u.reclaimable !== undefined) out.push(f.reclaimable, flag(u.reclaimable));
  if (u.inFlightUntil !== undefined) out.push(f.inFlightUntil, u.inFlightUntil === null ? '' : String(u.inFlightUntil));
  if (u.resolution !== undefined) out.push(f.resolution, u.resolution ?? '');
  return out;
}

/**
 * One attempt-log entry as a short text (`at|result|latency ms|wallet request id`, ~50 bytes), so
 * a capped list of them stays a compact listpack.
 */
export function encodeAttempt(a: AttemptLogEntry): string {
  return `${a.at}|${a.result === 'unknown' ? 'u' : a.result}|${Math.round(a.latencyMs)}|${a.walletRequestId ?? ''}`;
}

export function decodeAttempt(text: string): AttemptLogEntry {
  const [at = '0', result = 'u', latency = '0', ...requestId] = text.split('|');
  const walletRequestId = requestId.join('|');
  return { at: Number(at), result: result === 'u' ? 'unknown' : Number(result), latencyMs: Number(latency), walletRequestId: walletRequestId === '' ? null : walletRequestId };
}

/** An HGETALL-style flat reply as an object. */
export function pairsToObject(flat: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) out[flat[i]!] = flat[i + 1]!;
  return out;
}
