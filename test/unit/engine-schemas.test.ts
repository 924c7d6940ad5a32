import { betBody, transactionIdParam } from '../../src/engine/schemas';
import { LosslessNumber } from '../../src/lib/json';

describe('ids', () => {
  it('refuse a lone surrogate and keep a well-formed pair', () => {
    expect(transactionIdParam.safeParse('su\ud800').success).toBe(false);
    expect(transactionIdParam.safeParse('su\udfff').success).toBe(false);
    expect(transactionIdParam.safeParse('\udc00\ud800').success).toBe(false);
    expect(transactionIdParam.safeParse('t-\u{1F600}').data).toBe('t-\u{1F600}');
    expect(betBody.safeParse({ round_id: 'r\u{1F600}', transaction_id: 't', amount: new LosslessNumber('1') }).success).toBe(true);
  });
});
