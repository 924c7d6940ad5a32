import { z } from 'zod';
import { LosslessNumber } from '../lib/json';
import { fractionDigits, toMinor } from '../lib/money';
import { U64_MAX } from '../lib/schemas';
import { MAX_ID_LENGTH } from '../wallet/protocol';
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

export const emptyBody = z.strictObject({});

export const betBody = z.strictObject({ round_id: id, transaction_id: id, amount, round_closed: roundClosed });
export type BetBody = z.output<typeof betBody>;

/** win and refund share one shape. */
export const settleBody = z.strictObject({ round_id: id, transaction_id: id, bet_transaction_id: id, amount, round_closed: roundClosed });
export type SettleBody = z.output<typeof settleBody>;

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
