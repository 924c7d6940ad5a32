import { auditEntryOf, type AuditEntry } from '../store/audit';
import { decodeAttempt, pairsToObject } from '../store/record-codec';

/**
 * An outbox entry (includes/ledger-outbox.lua, or an audit entry) as the ledger's row. Values stay
 * the text Redis holds: amounts, balances and ids reach PostgreSQL as text and are cast there
 * (numeric, numeric(20,0)), never through a JS number.
 */
export interface ChangeRow {
  readonly wallet: string;
  readonly transactionId: string;
  readonly changeNo: number;
  readonly createdAt: number;
  readonly changedAt: number;
  readonly kind: string;
  readonly state: string;
  readonly amount: string;
  readonly currency: string;
  readonly playerId: string;
  readonly siteId: string;
  readonly sessionId: string;
  readonly roundId: string;
  readonly walletRoundId: string;
  readonly referenceId: string | null;
  readonly isCompensation: boolean;
  /** A debit's compensation rollback, once one was scheduled. */
  readonly compensationId: string | null;
  readonly attempts: number;
  readonly lastWalletCode: number | null;
  readonly walletRequestId: string | null;
  /** The engine call's request id: the claim's entry carries it; the writer gives later changes their record's. */
  readonly engineRequestId: string | null;
  readonly balance: string | null;
  readonly error: string | null;
  readonly resolution: string | null;
  readonly note: string | null;
  readonly outboxId: string;
}

export interface AuditRow extends AuditEntry {
  readonly wallet: string;
  readonly entryId: string;
  readonly at: number;
}

export type OutboxRow = { readonly type: 'change'; readonly row: ChangeRow } | { readonly type: 'audit'; readonly row: AuditRow };

const orNull = (v: string | undefined): string | null => (v === undefined || v === '' ? null : v);

/** Stream id `ms-seq` → ms. */
export const streamTime = (id: string): number => Number(id.slice(0, id.indexOf('-')));

/** One entry of `wallet`'s outbox of shard `shard`; undefined for an entry the ledger does not know. */
export function rowOf(wallet: string, shard: number, id: string, flat: readonly string[]): OutboxRow | undefined {
  const h = pairsToObject(flat);
  if (h.t === 'audit') {
    return {
      type: 'audit',
      row: {
        wallet,
        // Unique within the wallet: the shard's outbox entry id.
        entryId: `${shard}:${id}`,
        at: streamTime(id),
        ...auditEntryOf(h),
      },
    };
  }
  if (h.t !== 'tx' || h.id === undefined) return undefined;
  const attempt = orNull(h.attempt);
  return {
    type: 'change',
    row: {
      wallet,
      transactionId: h.id,
      changeNo: Number(h.change_no),
      createdAt: Number(h.created_at),
      changedAt: Number(h.updated_at || streamTime(id)),
      kind: h.kind ?? '',
      state: h.state ?? '',
      amount: h.amount || '0',
      currency: h.currency ?? '',
      playerId: h.player_id || '0',
      siteId: h.site_id || '0',
      sessionId: h.session_id ?? '',
      roundId: h.round_id ?? '',
      walletRoundId: h.wallet_round_id ?? '',
      referenceId: orNull(h.reference_id),
      isCompensation: h.is_compensation === '1',
      compensationId: orNull(h.compensation_id),
      attempts: Number(h.attempts || 0),
      lastWalletCode: h.last_code ? Number(h.last_code) : null,
      walletRequestId: attempt === null ? null : decodeAttempt(attempt).walletRequestId,
      engineRequestId: orNull(h.engine_request_id),
      balance: orNull(h.balance),
      error: orNull(h.error),
      resolution: orNull(h.resolution),
      note: orNull(h.note),
      outboxId: `${shard}:${id}`,
    },
  };
}
