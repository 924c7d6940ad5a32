import { betBody, emptyBody, settleBody } from '../../src/engine/schemas';
import { LosslessNumber, parseJson } from '../../src/lib/json';
import type { FastParser } from '../../src/lib/schemas';
import { successResponseSchema } from '../../src/wallet/protocol';
import { seeded } from '../support/seeded';

/**
 * The hand-written checks in front of the hot schemas (withFastPath) answer only what the schema
 * would, with the schema's output, and leave every other input to the schema: compared on the
 * valid shapes and on seeded mutations of them (keys dropped, added, doubled as __proto__; each
 * value swapped for an awkward one).
 */
const n = (text: string): LosslessNumber => new LosslessNumber(text);
const MAX = '18446744073709551615';

const ID_VALUES: unknown[] = ['', 'a', 'r-1', 'x'.repeat(36), 'x'.repeat(37), 'su\ud800', '\udc00\ud800', 't-\u{1F600}', 'é', ' ', 'gw-1', 'GW-x', 'gw', 'x-gw-', n('7'), null, true, ['a'], {}];
const AMOUNT_VALUES: unknown[] = [n('0'), n('1'), n('1.50'), n('10.005'), n('-1'), n('1e5'), n('1.0E-2'), n(MAX), 5, '5', '1.50', null, false, undefined];
const FLAG_VALUES: unknown[] = [true, false, undefined, null, 'true', n('1'), 0];
const U64_VALUES: unknown[] = [n('0'), n('7'), n(MAX), n('18446744073709551616'), n('-1'), n('1.5'), n('1e3'), '7', MAX, '', '07', 7, 2 ** 53, -1, null, true];
const TEXT_VALUES: unknown[] = ['', 'ok', 'tok-1', n('1'), null, 5, undefined];
const CODE_VALUES: unknown[] = [n('1'), n('0'), n('2'), n('1.0'), n('-1'), n('9007199254740993'), 1, '1', 'one', null];
const BALANCE_VALUES: unknown[] = [n('0'), n('95.00'), n('1.5e2'), n('-1'), 95, 95.5, -1, Infinity, '95.00', '9e1', '', null];

interface Case<T> {
  readonly name: string;
  readonly parser: FastParser<T>;
  readonly valid: readonly Record<string, unknown>[];
  readonly values: Readonly<Record<string, readonly unknown[]>>;
}

const cases: Case<unknown>[] = [
  {
    name: 'bet body',
    parser: betBody,
    valid: [
      { round_id: 'r-1', transaction_id: 't-1', amount: n('10.50') },
      { round_id: 'r-1', transaction_id: 't-1', amount: n('0'), round_closed: true },
    ],
    values: { round_id: ID_VALUES, transaction_id: ID_VALUES, amount: AMOUNT_VALUES, round_closed: FLAG_VALUES },
  },
  {
    name: 'win or refund body',
    parser: settleBody,
    valid: [
      { round_id: 'r-1', transaction_id: 'w-1', bet_transaction_id: 't-1', amount: n('20') },
      { round_id: 'r-1', transaction_id: 'w-1', bet_transaction_id: 't-1', amount: n('20'), round_closed: false },
    ],
    values: { round_id: ID_VALUES, transaction_id: ID_VALUES, bet_transaction_id: ID_VALUES, amount: AMOUNT_VALUES, round_closed: FLAG_VALUES },
  },
  { name: 'empty body', parser: emptyBody, valid: [{}], values: {} },
  {
    name: 'wallet success',
    parser: successResponseSchema,
    valid: [
      { status: true, code: n('1'), message: '', request_id: 'w-1', token: 'tok', player_id: n(MAX), game_id: 'g', site_id: n('7'), provider_id: n('1'), balance: n('95.00') },
      { status: true, code: n('1'), message: 'ok', request_id: 'w-1', token: 'tok', player_id: '7', game_id: n('3'), site_id: 's', provider_id: '1', balance: '95', transaction_status: 'applied' },
    ],
    values: {
      status: [true, false, 'true', n('1')],
      code: CODE_VALUES,
      message: TEXT_VALUES,
      request_id: TEXT_VALUES,
      token: TEXT_VALUES,
      player_id: U64_VALUES,
      game_id: [...U64_VALUES, 'g'],
      site_id: [...U64_VALUES, 's'],
      provider_id: U64_VALUES,
      balance: BALANCE_VALUES,
    },
  },
];

/** The fast path either defers or gives exactly the schema's output; the parser as a whole always answers as the schema. */
function expectSameAnswer<T>(parser: FastParser<T>, input: unknown): boolean {
  const bySchema = parser.schema.safeParse(input);
  const fast = parser.fast(input);
  if (fast !== undefined) {
    expect(bySchema.success).toBe(true);
    expect(fast).toStrictEqual(bySchema.data);
  }
  const answered = parser.safeParse(input);
  expect(answered.success).toBe(bySchema.success);
  if (answered.success) expect(answered.data).toStrictEqual(bySchema.data);
  else expect(answered.error?.issues).toEqual(bySchema.error?.issues);
  return fast !== undefined;
}

describe.each(cases)('$name', ({ parser, valid, values }) => {
  it('takes every valid shape on the fast path', () => {
    for (const input of valid) expect(expectSameAnswer(parser, input)).toBe(true);
  });

  it('answers as the schema on seeded mutations, and leaves odd inputs to it', () => {
    const { int, pick, next } = seeded(0x0fa5_7a11);
    const keys = Object.keys(values);
    let fast = 0;
    let deferred = 0;
    for (let i = 0; i < 4000; i += 1) {
      const input: Record<string, unknown> = { ...pick(valid) };
      for (let m = int(3); m >= 0; m -= 1) {
        const roll = next();
        if (roll < 0.6 && keys.length > 0) {
          const key = pick(keys);
          const value = pick(values[key] as readonly unknown[]);
          if (value === undefined && next() < 0.5) delete input[key];
          else input[key] = value;
        } else if (roll < 0.8) {
          input[pick(['extra', 'amount2', 'Round_id', 'status'])] = pick([1, 'x', null]);
        } else if (roll < 0.9) {
          Object.defineProperty(input, '__proto__', { value: {}, enumerable: true, configurable: true, writable: true });
        } else if (keys.length > 0) {
          delete input[pick(keys)];
        }
      }
      if (expectSameAnswer(parser, input)) fast += 1;
      else deferred += 1;
    }
    // Both paths were exercised, so the comparison above means something either way.
    expect(fast).toBeGreaterThan(100);
    expect(deferred).toBeGreaterThan(100);
  });

  it('leaves non-objects to the schema', () => {
    for (const input of [null, undefined, 'x', n('1'), [], [valid[0]], parseJson('[{}]'), Object.create(null)]) expect(expectSameAnswer(parser, input)).toBe(false);
  });
});
