import { parse as losslessParse, stringify as losslessStringify } from 'lossless-json';
import { LosslessNumber, MAX_DEPTH, parseJson, stringifyJson, JsonSyntaxError, jsonNumber } from '../../src/lib/json';
import { fromMinor, sameAmount, toMinor } from '../../src/lib/money';
import { decimalText, u64 } from '../../src/lib/schemas';
import { encodeRequest, successResponseSchema } from '../../src/wallet/protocol';
import { seeded } from '../support/seeded';

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

describe('parseJson reads what lossless-json parse reads', () => {
  /** A text form of a parse's outcome: numbers by their source text, objects with their prototype. */
  const canon = (v: unknown): string => {
    if (v instanceof LosslessNumber) return `N(${v.value})`;
    if (Array.isArray(v)) return `[${v.map(canon).join(',')}]`;
    if (typeof v === 'object' && v !== null) {
      const proto = Object.getPrototypeOf(v) === Object.prototype ? '' : '!proto';
      return `{${proto}${Object.keys(v).map((k) => `${JSON.stringify(k)}:${canon((v as Record<string, unknown>)[k])}`).join(',')}}`;
    }
    return JSON.stringify(v) ?? String(v);
  };
  const outcome = (parse: (text: string) => unknown, text: string): string => {
    try {
      return canon(parse(text));
    } catch {
      return 'error';
    }
  };
  const theirs = (text: string): unknown => losslessParse(text, undefined, (n: string) => new LosslessNumber(n));
  const same = (text: string): void => expect({ text, ours: outcome(parseJson, text) }).toEqual({ text, ours: outcome(theirs, text) });

  it.each([
    '{}', '[]', '""', '0', '-0', '1', '-1', '10.50', '1e400', '-0.0e-0', '1E+2', '01', '-', '-a', '1.', '.5', '1e', '1e+', '+1', '0x10',
    'true', 'false', 'null', 'tru', 'nul', 'True', ' true ', '\t\n\r null \r\n', '\ufeff{}', '', ' ',
    '"a\\"b"', '"\\/"', '"\\u00e9\\u20AC"', '"\\ud83d\\ude00"', '"\\ud800"', '"\\u12G4"', '"\\x"', '"\\"', '"abc', '"a\u0001b"', '"a\u007fb"',
    '{"a":1,"a":1}', '{"a":1,"a":2}', '{"a":{"b":[1,2.0]},"a":{"b":[1,2.0]}}', '{"a":[1],"a":{"0":1}}', '{"__proto__":{"x":1}}', '{"constructor":1,"toString":2}',
    '{"a":1,}', '{,"a":1}', '{"a" 1}', '{"a":}', '{a:1}', "{'a':1}", '{"a":1 "b":2}', '{"a":1 , "b" : 2 }', '[1,]', '[,1]', '[1 2]', '[ 1 , [ 2 ] ]', '{"a":1}x', '{"a":1}{}',
    `{"player_id":${MAX},"amount":10.50}`, `[${'['.repeat(50)}${']'.repeat(50)}]`,
  ])('%j', (text) => same(text));

  it(`refuses nesting deeper than ${MAX_DEPTH} as bad JSON, where lossless-json overflowed the stack`, () => {
    const nested = (n: number, open: string, close: string): string => open.repeat(n) + close.repeat(n);
    expect(canon(parseJson(nested(MAX_DEPTH, '[', ']')))).toBe(`${'['.repeat(MAX_DEPTH)}${']'.repeat(MAX_DEPTH)}`);
    expect(() => parseJson(nested(MAX_DEPTH + 1, '[', ']'))).toThrow(JsonSyntaxError);
    expect(() => parseJson(`${'{"a":'.repeat(MAX_DEPTH + 1)}1${'}'.repeat(MAX_DEPTH + 1)}`)).toThrow(JsonSyntaxError);
    // A body of the engine's 16 KiB limit all brackets: refused as JSON, no stack overflow.
    expect(() => parseJson(nested(8192, '[', ']'))).toThrow(JsonSyntaxError);
  });

  it('matches on seeded random texts, valid and broken', () => {
    const { int, pick } = seeded(0x51ed_c0de);
    const PIECES = ['a', 'é', '😀', ' ', '\\"', '\\\\', '\\/', '\\n', '\\u0041', '\\uD83D', '\\x', '\\u00', '\u0001', '\ud800', '__proto__'];
    const str = (): string => `"${Array.from({ length: int(5) }, () => pick(PIECES)).join('')}"`;
    const num = (): string => `${pick(['', '-'])}${pick(['0', '7', '18446744073709551615', '10'])}${pick(['', '.5', '.50', '.'])}${pick(['', 'e3', 'E-2', 'e+', 'e'])}`;
    const ws = (): string => pick(['', '', ' ', '\n\t', '\r'])
    const value = (depth: number): string => {
      const kind = depth === 0 ? int(3) : int(5);
      if (kind === 0) return str();
      if (kind === 1) return num();
      if (kind === 2) return pick(['true', 'false', 'null']);
      if (kind === 3) return `[${ws()}${Array.from({ length: int(4) }, () => `${ws()}${value(depth - 1)}${ws()}`).join(',')}]`;
      return `{${ws()}${Array.from({ length: int(4) }, () => `${pick([str(), '"k"', '"k"'])}${ws()}:${ws()}${value(depth - 1)}`).join(`${ws()},${ws()}`)}}`;
    };
    const GRAMMAR = ['{', '}', '[', ']', ',', ':', '"', '\\', '-', '.', 'e', '0', ' ', 'n'];
    const broken = (text: string): string => {
      const at = int(text.length + 1);
      return pick([
        () => text.slice(0, at) + text.slice(at + 1),
        () => text.slice(0, at) + pick(GRAMMAR) + text.slice(at),
        () => text.slice(0, at),
      ])();
    };
    let valid = 0;
    for (let i = 0; i < 4000; i++) {
      const good = value(3);
      const text = i % 2 === 0 ? good : broken(good);
      same(text);
      if (outcome(theirs, text) !== 'error') valid += 1;
    }
    // Both kinds were met, many of each.
    expect(valid).toBeGreaterThan(1000);
    expect(valid).toBeLessThan(3900);
  });
});

describe('stringifyJson writes what lossless-json stringify writes', () => {
  const BIG = 2n ** 64n - 1n;
  const TRICKY = 'q"b\\c/\n\r\t\b\f\u0000\u001f\u007f\u2028\u2029é€😀\ud800x\udc00';
  // Another copy of lossless-json is recognised by this marker, not by instanceof.
  const foreignNumber = { [Symbol.for('lossless-json.LosslessNumber')]: true, value: '7.10', toString: () => '7.10' };

  const table: Array<[string, unknown]> = [
    ['2^64−1 as LosslessNumber', jsonNumber(MAX)],
    ['2^64−1 as bigint', BIG],
    ['negative bigint', -BIG],
    ['amounts', { a: jsonNumber('10.50'), b: jsonNumber('0.125'), c: jsonNumber('0'), d: jsonNumber('-1.5e-7') }],
    ['wallet debit body', { token: 't', player_id: jsonNumber(MAX), amount: jsonNumber('10.50'), round_closed: false }],
    ['nested', { a: [1, [2, { b: [] }], {}], c: { d: { e: null } } }],
    ['tricky string', TRICKY],
    ['one escape each', ['"', '\\', '\u0000', '\u001f', 'a\ud800', '\udc00b', '\udc00\ud800', '😀', '\u007f', ' ']],
    ['tricky keys', { [TRICKY]: 1, '': 2, 'a"b': 3 }],
    ['undefined, function and symbol properties', { a: undefined, b: () => 1, c: Symbol('s'), d: 1 }],
    ['undefined, function and symbol elements', [undefined, () => 1, Symbol('s'), 1]],
    ['sparse array', [1, , 3]], // eslint-disable-line no-sparse-arrays -- a hole is what is tested
    ['null', null],
    ['booleans', [true, false]],
    ['numbers', [0, -0, 1.5, -2e-7, 1e21, Number.MAX_SAFE_INTEGER, NaN, Infinity, -Infinity]],
    ['Date', { at: new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 6)) }],
    ['invalid Date', new Date(Number.NaN)],
    ['boxed primitives', [Object(true), Object(1.5), Object('s')]],
    ['toJSON', { a: { toJSON: () => ({ n: jsonNumber('1.0') }) }, b: { toJSON: () => undefined } }],
    ['toJSON on an array is not called', Object.assign([1], { toJSON: () => 'x' })],
    ['Map and Set have no own keys', [new Map([[1, 2]]), new Set([1])]],
    ['object without prototype', Object.assign(Object.create(null) as object, { a: 1 })],
    ['inherited properties are skipped', Object.assign(Object.create({ inherited: 1 }) as object, { own: 2 })],
    ['LosslessNumber from another copy', { n: foreignNumber }],
    ['empty object', {}],
    ['empty array', []],
  ];

  it.each(table)('%s', (_name, value) => {
    expect(stringifyJson(value)).toBe(losslessStringify(value));
  });

  it('writes the expected text', () => {
    expect(stringifyJson({ id: jsonNumber(MAX), big: BIG, amount: jsonNumber('10.50'), small: jsonNumber('0.125') })).toBe(
      `{"id":${MAX},"big":${MAX},"amount":10.50,"small":0.125}`,
    );
    expect(stringifyJson({ a: undefined, b: () => 1, c: Symbol('s'), d: null, e: [undefined, () => 1, true, false] })).toBe('{"d":null,"e":[null,null,true,false]}');
    expect(stringifyJson({ at: new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 6)) })).toBe('{"at":"2024-01-02T03:04:05.006Z"}');
    expect(stringifyJson('q"b\\c\n\u0001\u2028é😀\ud800')).toBe('"q\\"b\\\\c\\n\\u0001\u2028é😀\\ud800"');
    expect(stringifyJson([NaN, Infinity, -0, 1.5])).toBe('[null,null,0,1.5]');
    expect(stringifyJson({ a: [], b: {} })).toBe('{"a":[],"b":{}}');
  });

  it('refuses a top-level value without JSON text', () => {
    for (const value of [undefined, () => 1, Symbol('s'), { toJSON: () => undefined }]) {
      expect(() => stringifyJson(value)).toThrow(new TypeError('value is not JSON-serialisable'));
    }
  });

  it('matches on random nested values', () => {
    const { next, int, pick } = seeded(0x2f6b_1a3d);
    const CHARS = ['a', 'Z', '0', ' ', '"', '\\', '/', '\n', '\u0000', '\u001f', '\u007f', '\u2028', 'é', '€', '😀', '\ud800', '\udfff'];
    const text = (): string => Array.from({ length: int(6) }, () => pick(CHARS)).join('');
    const run = (): string => Array.from({ length: 1 + int(20) }, () => String(int(10))).join('');
    const digits = (): string => run().replace(/^0+(?=.)/, '');
    const leaf = (): unknown =>
      pick<() => unknown>([
        text,
        () => jsonNumber(`${pick(['', '-'])}${digits()}${pick(['', `.${run()}`])}${pick(['', `e${pick(['', '+', '-'])}${int(30)}`])}`),
        () => BigInt(digits()) * pick([1n, -1n]),
        () => pick([0, -0, 1.5, -7, 1e21, 5e-324, NaN, Infinity, -Infinity, next() * 1e6]),
        () => next() < 0.5,
        () => null,
        () => undefined,
        () => (): number => 1,
        () => Symbol('s'),
        () => new Date(int(2 ** 42)),
      ])();
    const value = (depth: number): unknown => {
      const kind = depth === 0 ? 0 : int(3);
      if (kind === 0) return leaf();
      if (kind === 1) return Array.from({ length: int(5) }, () => value(depth - 1));
      const out: Record<string, unknown> = {};
      for (let i = int(5); i > 0; i--) out[text()] = value(depth - 1);
      return out;
    };
    for (let i = 0; i < 500; i++) {
      const v = value(4);
      const expected = losslessStringify(v);
      if (expected === undefined) expect(() => stringifyJson(v)).toThrow(TypeError);
      else expect(stringifyJson(v)).toBe(expected);
    }
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
