import { registerRate, takeInWindow, type RateWindow } from './rate';
import type { RedisClient } from './redis';
import type { ShardLayout } from './shards';
import { pairsToObject } from './record-codec';

/**
 * The operators' audit trail: a Redis stream under the prefix, capped (approximately) to
 * AUDIT_CAP entries, appended to by every console action (who, when, what, the state before and
 * after, the operator's note). Append-only: nothing here edits or deletes an entry.
 */
export const AUDIT_CAP = 100_000;

/**
 * Entries for an id the gateway does not know, kept per minute at most: made-up ids cannot push the
 * real entries out of the capped trail. The rest are refused the same and logged, not kept here.
 */
export const UNKNOWN_ID_ENTRIES: RateWindow = Object.freeze({ limit: 60, windowMs: 60_000 });

export interface AuditEntry {
  /** The Basic user who acted. */
  readonly user: string;
  /** redrive | recheck | resolve-applied | resolve-not-applied */
  readonly action: string;
  readonly transactionId: string;
  /** The record the action moved (a debit's compensation for a debit), when it differs. */
  readonly targetId: string;
  readonly stateBefore: string;
  readonly stateAfter: string;
  /** What came of it: done, not_dead, not_found, the wallet's status answer … */
  readonly result: string;
  readonly note: string;
  readonly requestId: string;
}

export interface StoredAuditEntry extends AuditEntry {
  /** The stream id (its time part is when the entry was written). */
  readonly id: string;
  readonly at: number;
}

/** An entry as the stream's field/value pairs (the resolve script writes it in its own step). */
export function auditFields(e: AuditEntry): string[] {
  return [
    'user', e.user,
    'action', e.action,
    'transaction_id', e.transactionId,
    'target_id', e.targetId,
    'state_before', e.stateBefore,
    'state_after', e.stateAfter,
    'result', e.result,
    'note', e.note,
    'request_id', e.requestId,
  ];
}

/** An audit entry's fields as the audit stream and the ledger's outbox hold them. */
export function auditEntryOf(h: Readonly<Record<string, string | undefined>>): AuditEntry {
  return {
    user: h.user ?? '',
    action: h.action ?? '',
    transactionId: h.transaction_id ?? '',
    targetId: h.target_id ?? '',
    stateBefore: h.state_before ?? '',
    stateAfter: h.state_after ?? '',
    result: h.result ?? '',
    note: h.note ?? '',
    requestId: h.request_id ?? '',
  };
}

function decode(id: string, flat: readonly string[]): StoredAuditEntry {
  return { id, at: Number(id.split('-')[0]), ...auditEntryOf(pairsToObject(flat)) };
}

export interface AuditTrail {
  append(entry: AuditEntry): Promise<void>;
  /** An action on an id the gateway does not know: appended within UNKNOWN_ID_ENTRIES; whether it was. */
  appendUnknown(entry: AuditEntry): Promise<boolean>;
  /** Newest first; `before` (a stream id, exclusive) pages further back. */
  recent(count: number, before?: string): Promise<StoredAuditEntry[]>;
}

/** Stream ids `ms-seq`, newest first. */
export function newerFirst(a: StoredAuditEntry, b: StoredAuditEntry): number {
  const [am, as] = a.id.split('-').map(Number) as [number, number];
  const [bm, bs] = b.id.split('-').map(Number) as [number, number];
  return bm - am || bs - as;
}

/**
 * Each shard has a stream: a resolve writes its entry in the record's shard, in the same step
 * (resolve-11.lua); the other actions write shard 0's. Reading merges them newest first. With a
 * ledger (`ledger`), each entry goes to the shard's ledger outbox in the same MULTI.
 */
export function createAuditTrail(redis: RedisClient, layout: ShardLayout, ledger = false): AuditTrail {
  registerRate(redis);
  const append = async (entry: AuditEntry): Promise<void> => {
    const keys = layout.keys(0);
    if (!ledger) {
      await redis.xadd(keys.audit(), 'MAXLEN', '~', String(AUDIT_CAP), '*', ...auditFields(entry));
      return;
    }
    const replies = await redis.multi().xadd(keys.audit(), 'MAXLEN', '~', String(AUDIT_CAP), '*', ...auditFields(entry)).xadd(keys.ledgerOutbox(), '*', 't', 'audit', ...auditFields(entry)).exec();
    const failed = replies?.find(([err]) => err !== null)?.[0];
    if (replies === null || failed) throw failed ?? new Error('the audit entry was not written (MULTI aborted)');
  };
  return {
    append,
    async appendUnknown(entry) {
      if (!(await takeInWindow(redis, layout.keys(0).auditUnknown(), UNKNOWN_ID_ENTRIES)).allowed) return false;
      await append(entry);
      return true;
    },
    async recent(count, before) {
      const perShard = await Promise.all(
        layout.all.map(async (shard) => {
          const rows = await redis.xrevrange(layout.keys(shard).audit(), before === undefined ? '+' : `(${before}`, '-', 'COUNT', count);
          return rows.map(([id, flat]) => decode(id, flat));
        }),
      );
      return perShard.flat().sort(newerFirst).slice(0, count);
    },
  };
}
