import { MAX_COMPENSATIONS, compensationTransactionId, nextCompensationId } from '../../src/duties/compensation-id';
import { exactDecimal } from '../../src/lib/money';
import { isReservedId } from '../../src/lib/reserved-ids';

describe('compensation ids (contract 5.1, 5.4)', () => {
  it('are gw- and 32 hex digits, the same for the same debit and generation, another for the next generation', () => {
    const first = compensationTransactionId('bet-1');
    expect(first).toMatch(/^gw-[0-9a-f]{32}$/);
    expect(first).toHaveLength(35);
    expect(compensationTransactionId('bet-1')).toBe(first);
    expect(compensationTransactionId('bet-2')).not.toBe(first);
    expect(new Set([0, 1, 2, 3].map((g) => compensationTransactionId('bet-1', g))).size).toBe(4);
  });

  it('the next id follows the one a debit names now; an engine refund standing in (or none) is followed by the first', () => {
    expect(nextCompensationId('bet-1', null)).toBe(compensationTransactionId('bet-1', 0));
    expect(nextCompensationId('bet-1', 'refund-9')).toBe(compensationTransactionId('bet-1', 0));
    expect(nextCompensationId('bet-1', compensationTransactionId('bet-1', 0))).toBe(compensationTransactionId('bet-1', 1));
    expect(nextCompensationId('bet-1', compensationTransactionId('bet-1', 5))).toBe(compensationTransactionId('bet-1', 6));
    expect(nextCompensationId('bet-1', compensationTransactionId('bet-1', MAX_COMPENSATIONS - 1))).toBeUndefined();
  });

  it('lie in the reserved namespace, in any letter case, which engine ids cannot use', () => {
    expect(isReservedId(compensationTransactionId('bet-1'))).toBe(true);
    expect(isReservedId('GW-anything')).toBe(true);
    expect(isReservedId('Gw-')).toBe(true);
    for (const id of ['gw', 'g', 'bet-gw-1', ' gw-1', 'gw_1']) expect(isReservedId(id)).toBe(false);
  });
});

describe('exact decimals', () => {
  it('drop trailing fraction zeros and nothing else', () => {
    expect(['10', '10.0', '10.00', '10.000'].map(exactDecimal)).toEqual(['10', '10', '10', '10']);
    expect(['0', '0.0', '0.50', '100', '100.10', '1000'].map(exactDecimal)).toEqual(['0', '0', '0.5', '100', '100.1', '1000']);
  });
});
