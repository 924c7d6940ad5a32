import { LosslessNumber, parseJson, stringifyJson, JsonSyntaxError, jsonNumber } from '../../src/lib/json';
import { fromMinor, sameAmount, toMinor } from '../../src/lib/money';
import { decimalText, u64 } from '../../src/lib/schemas';
import { encodeRequest, successResponseSchema } from '../../src/wallet/protocol';

const MAX = '18446744073709551615';

describe('lossless JSON', () => {
  it('reads 2^64−1 exactly and writes it back unchanged', () => {
    const text = `{"player_id":${MAX},"amount":10.50,"n":[1,2.0]}`;
    const value = parseJson(text) as { player_id: LosslessNumber };
    expect(value.player_id).toBeInstanceOf(LosslessNumber);
    expect(value.player_id.value).toBe(MAX);
    expect(stringifyJson(value)).toBe(text);
  });

  it('never goes through Number (which would print 18446744073709552000)', () => {
    expect(String(Number(MAX))).toBe('18446744073709552000');
    expect(stringifyJson({ id: jsonNumber(MAX) })).toBe(`{"id":${MAX}}`);
  });

  it('throws a typed error on bad JSON', () => {
    expect(() => parseJson('{"a":')).toThrow(JsonSyntaxError);
    expect(() => parseJson('<html>')).toThrow(JsonSyntaxError);
  });
});

describe('exact schemas', () => {
  it('u64 accepts 0..2^64−1 as number or string and refuses the rest', () => {
    expect(u64.parse(new LosslessNumber(MAX))).toBe(MAX);
    expect(u64.parse('0')).toBe('0');
    expect(u64.parse(42)).toBe('42');
    for (const bad of ['18446744073709551616', '-1', '01', '1.0', '1e3', '', 1.5, null, new LosslessNumber('2.5')]) {
      expect(u64.safeParse(bad).success).toBe(false);
    }
  });

  it('decimalText keeps the text as given', () => {
    expect(decimalText.parse(new LosslessNumber('10.50'))).toBe('10.50');
    expect(decimalText.parse(new LosslessNumber('0'))).toBe('0');
    for (const bad of [new LosslessNumber('1e2'), new LosslessNumber('-1'), '-0.5', '.5', 'abc']) {
      expect(decimalText.safeParse(bad).success).toBe(false);
    }
  });
});

describe('money', () => {
  it('converts between decimal text and minor units exactly', () => {
    expect(toMinor('10.5', 2)).toBe(1050n);
    expect(toMinor('0.07', 2)).toBe(7n);
    expect(toMinor('123456789012345678.99', 2)).toBe(12345678901234567899n);
    expect(fromMinor(1050n, 2)).toBe('10.50');
    expect(fromMinor(7n, 2)).toBe('0.07');
    expect(fromMinor(5n, 0)).toBe('5');
    expect(fromMinor(-7n, 2)).toBe('-0.07');
    expect(() => toMinor('0.001', 2)).toThrow(RangeError);
  });

  it('compares amounts by value', () => {
    expect(sameAmount('10.5', '10.50')).toBe(true);
    expect(sameAmount('10', '10.00')).toBe(true);
    expect(sameAmount('10.5', '10.05')).toBe(false);
  });
});

describe('wallet wire format', () => {
  it('writes ids and amounts as raw JSON numbers with every digit', () => {
    const body = encodeRequest('debit', {
      token: 't',
      player_id: MAX,
      site_id: '1',
      provider_id: MAX,
      game_id: 'g',
      currency: 'EUR',
      amount: '10.50',
      round_id: 'r',
      transaction_id: 'x',
      round_closed: false,
    });
    expect(body).toBe(
      `{"token":"t","player_id":${MAX},"site_id":1,"provider_id":${MAX},"game_id":"g","currency":"EUR","amount":10.50,"round_id":"r","transaction_id":"x","round_closed":false}`,
    );
  });

  it('accepts game_id and site_id as number or string in answers', () => {
    const base = { status: true, code: 1, message: '', request_id: 'r', token: 't', player_id: MAX, provider_id: 1, balance: 5 };
    const asNumbers = successResponseSchema.parse(parseJson(JSON.stringify({ ...base, game_id: 7, site_id: 9 }).replace('"player_id":"' + MAX + '"', `"player_id":${MAX}`)));
    expect(asNumbers).toMatchObject({ game_id: '7', site_id: '9', player_id: MAX, balance: '5' });
    const asStrings = successResponseSchema.parse(parseJson(JSON.stringify({ ...base, game_id: '7', site_id: '9' })));
    expect(asStrings).toMatchObject({ game_id: '7', site_id: '9' });
  });
});
