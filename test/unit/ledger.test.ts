import { decodeCursor, encodeCursor } from '../../src/ledger/history';
import { monthStart, oldestKeptMonth, partitionName } from '../../src/ledger/partitions';
import { rowOf } from '../../src/ledger/rows';

/** The ledger's pure parts: months and the retention's cut, cursors, outbox entries as rows. */
describe('monthly partitions', () => {
  it('names a month by its UTC start', () => {
    expect(new Date(monthStart(Date.parse('2026-11-30T23:59:59.999Z'))).toISOString()).toBe('2026-11-01T00:00:00.000Z');
    expect(partitionName('ledger_changes', Date.parse('2027-01-01T00:00:00Z'))).toBe('ledger_changes_y2027m01');
  });

  it('keeps the month holding the cut-off whole, so history reaches back at least the retention', () => {
    const now = Date.parse('2026-11-27T12:00:00Z');
    // 400 days before: 2025-10-23, in October 2025.
    expect(new Date(oldestKeptMonth(now, 400)).toISOString()).toBe('2025-10-01T00:00:00.000Z');
    expect(new Date(oldestKeptMonth(now, 1)).toISOString()).toBe('2026-11-01T00:00:00.000Z');
  });
});

describe('cursors', () => {
  it('round-trip, and anything else is refused', () => {
    const cursor = { createdAt: 1_764_000_000_123, wallet: 'casino-a', transactionId: 'b-ü,"x' };
    expect(decodeCursor(encodeCursor(cursor))).toEqual(cursor);
    for (const bad of ['', 'zzz', Buffer.from('[1,2]').toString('base64url'), Buffer.from('[1.5,"a","b"]').toString('base64url')]) {
      expect(decodeCursor(bad)).toBeUndefined();
    }
  });
});

describe('outbox entries', () => {
  const flat = (o: Record<string, string>) => Object.entries(o).flat();

  it('a change keeps amounts, balances and ids as the exact text Redis holds', () => {
    const row = rowOf('default', 3, '1764000000000-7', flat({
      t: 'tx', id: 'b-1', change_no: '2', kind: 'debit', state: 'succeeded', amount: '10.10', currency: 'EUR', player_id: '18446744073709551615', site_id: '7',
      session_id: 's', round_id: 'r', wallet_round_id: 'r', reference_id: '', is_compensation: '', compensation_id: '', attempts: '1', last_code: '1',
      balance: '989.90', error: '', resolution: '', note: '', created_at: '1763999999000', updated_at: '1764000000000', attempt: '1764000000000|1|3|wallet-req-1',
    }));
    expect(row).toEqual({ type: 'change', row: expect.objectContaining({
      wallet: 'default', transactionId: 'b-1', changeNo: 2, amount: '10.10', playerId: '18446744073709551615', balance: '989.90', referenceId: null,
      lastWalletCode: 1, walletRequestId: 'wallet-req-1', createdAt: 1763999999000, changedAt: 1764000000000, outboxId: '3:1764000000000-7',
    }) });
  });

  it('an audit entry is named by its shard and entry id; an entry of an unknown kind is no row', () => {
    expect(rowOf('casino-b', 0, '1764000000001-0', flat({ t: 'audit', user: 'ops', action: 'redrive', transaction_id: 'w-1' }))).toEqual({
      type: 'audit',
      row: expect.objectContaining({ wallet: 'casino-b', entryId: '0:1764000000001-0', at: 1764000000001, user: 'ops', action: 'redrive', transactionId: 'w-1' }),
    });
    expect(rowOf('default', 0, '1-0', flat({ t: 'other' }))).toBeUndefined();
  });
});
