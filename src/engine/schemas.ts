import { z } from 'zod';
import { LosslessNumber } from '../lib/json';
import { fractionDigits, toMinor } from '../lib/money';
import { U64_MAX, isPlainRecord, withFastPath } from '../lib/schemas';
import { MAX_ID_LENGTH } from '../wallet/protocol';
import { RESERVED_ID_PREFIX, isReservedId } from '../lib/reserved-ids';
import type { FieldIssue } from './types';

/**
 * The edge schemas of the launch query and the game-engine bodies. Bodies come from parseJson, so
 * numbers arrive as LosslessNumber and ids/amounts keep every digit.
 */

const typed = (expected: string) => (issue: { code?: string; input?: unknown }) =>
  issue.code === 'invalid_type' ? (issue.input === undefined ? 'required' : `must be ${expected}`) : undefined;

/** A lone surrogate (in `u` mode a well-formed pair is one code point, not a match). */
const LONE_SURROGATE = /\p{Cs}/u;

/** Ids are stored and sent as UTF-8: a lone surrogate would become U+FFFD there, merging different ids. */
const id = z
  .string({ error: typed('a string') })
  .min(1, 'must not be empty')
  .max(MAX_ID_LENGTH, `must be at most ${MAX_ID_LENGTH} characters`)
  .refine((text) => !LONE_SURROGATE.test(text), 'must be well-formed Unicode (a lone surrogate is refused)');

/** An engine's transaction id: never in the namespace of the ids the gateway derives (contract 5.1). */
const RESERVED_MESSAGE = `must not start with "${RESERVED_ID_PREFIX}" (reserved for the gateway's own ids)`;
const transactionId = id.refine((text) => !isReservedId(text), RESERVED_MESSAGE);

const PLAIN_DECIMAL = /^(0|[1-9][0-9]*)(\.[0-9]+)?$/;

/** A JSON number ≥ 0 written as a plain decimal (no sign, no exponent), kept as its exact text. */
const amount = z.unknown().transform((value, ctx): string => {
  if (value === undefined) {
    ctx.addIssue({ code: 'custom', message: 'required' });
    return z.NEVER;
  }
  if (!(value instanceof LosslessNumber)) {
    ctx.addIssue({ code: 'custom', message: 'must be a JSON number' });
    return z.NEVER;
  }
  if (!PLAIN_DECIMAL.test(value.value)) {
    ctx.addIssue({ code: 'custom', message: 'must be a finite number ≥ 0 in plain decimal notation (no sign, no exponent)' });
    return z.NEVER;
  }
  return value.value;
});

const roundClosed = z.boolean({ error: typed('a boolean') }).optional();

const betBodySchema = z.strictObject({ round_id: id, transaction_id: transactionId, amount, round_closed: roundClosed });
export type BetBody = z.output<typeof betBodySchema>;

/** win and refund share one shape. */
const settleBodySchema = z.strictObject({ round_id: id, transaction_id: transactionId, bet_transaction_id: transactionId, amount, round_closed: roundClosed });
export type SettleBody = z.output<typeof settleBodySchema>;

// The fast paths of the three engine bodies (withFastPath): the same rules as the schemas above,
// for a body that keeps every one of them; any other body is the schema's to answer.

const plainId = (value: unknown): value is string =>
  typeof value === 'string' && value.length >= 1 && value.length <= MAX_ID_LENGTH && !LONE_SURROGATE.test(value);

const plainAmount = (value: unknown): string | undefined => (value instanceof LosslessNumber && PLAIN_DECIMAL.test(value.value) ? value.value : undefined);

const optionalBoolean = (value: unknown): value is boolean | undefined => value === undefined || typeof value === 'boolean';

/** A plain object with no key outside `allowed` (a strict object's unknown key is a refusal). */
function onlyKeys(input: unknown, allowed: ReadonlySet<string>): input is Record<string, unknown> {
  if (!isPlainRecord(input)) return false;
  for (const key in input) if (!allowed.has(key)) return false;
  return true;
}

/**
 * A strict engine body's fast path: only the shape's keys, ids (transaction ids outside the reserved
 * namespace) and the amount by the rules above,
 * `round_closed` a boolean when given (a key given, even as undefined by an in-process caller, is a
 * key of the schema's output too).
 */
function plainBody<T>(shape: Readonly<Record<string, unknown>>): (input: unknown) => T | undefined {
  const keys: ReadonlySet<string> = new Set(Object.keys(shape));
  return (input) => {
    if (!onlyKeys(input, keys)) return undefined;
    const out: Record<string, unknown> = {};
    for (const key of keys) {
      const value = input[key];
      if (key === 'amount') {
        const text = plainAmount(value);
        if (text === undefined) return undefined;
        out.amount = text;
      } else if (key === 'round_closed') {
        if (!optionalBoolean(value)) return undefined;
        if (key in input) out.round_closed = value;
      } else if (plainId(value) && (key === 'round_id' || !isReservedId(value))) {
        out[key] = value;
      } else {
        return undefined;
      }
    }
    return out as T;
  };
}

export const emptyBody = withFastPath(z.strictObject({}), plainBody<Record<string, never>>({}));
export const betBody = withFastPath<BetBody>(betBodySchema, plainBody(betBodySchema.shape));
export const settleBody = withFastPath<SettleBody>(settleBodySchema, plainBody(settleBodySchema.shape));

export const transactionIdParam = id;

const queryText = (max: number) =>
  z
    .string({ error: typed('given once, as text') })
    .min(1, 'must not be empty')
    .max(max, `must be at most ${max} characters`);

const U64_MESSAGE = 'must be an unsigned integer up to 18446744073709551615';
const u64Text = () =>
  queryText(20).refine((text) => /^(0|[1-9][0-9]*)$/.test(text) && BigInt(text) <= U64_MAX, U64_MESSAGE);

export const launchQuery = z.object({
  token: queryText(512),
  player_id: u64Text(),
  site_id: u64Text(),
  currency: queryText(16).regex(/^[A-Za-z0-9]+$/, 'must be letters and digits'),
  game_id: queryText(128),
});
export type LaunchQuery = z.output<typeof launchQuery>;

/** Every offending field named once (its problems joined); unknown keys are named one by one. */
export function fieldIssues(error: z.ZodError): FieldIssue[] {
  const byField = new Map<string, string[]>();
  const add = (field: string, message: string): void => {
    const messages = byField.get(field) ?? [];
    if (!messages.includes(message)) messages.push(message);
    byField.set(field, messages);
  };
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') for (const key of issue.keys) add(key, 'unknown field');
    else add(issue.path.map(String).join('.') || 'body', issue.message);
  }
  return [...byField].map(([field, messages]) => ({ field, message: messages.join('; ') }));
}

/** Extra rules on an already parsed amount that depend on the session's currency. */
export function amountIssue(text: string, digits: number, positive: boolean): FieldIssue | undefined {
  if (fractionDigits(text) > digits) return { field: 'amount', message: `must have at most ${digits} fraction digits for this currency` };
  if (positive && toMinor(text, digits) === 0n) return { field: 'amount', message: 'must be greater than 0 for a bet' };
  return undefined;
}
