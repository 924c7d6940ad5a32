import { z } from 'zod';
import { LosslessNumber } from './json';

/**
 * Zod building blocks for values that must stay exact. Inputs may arrive as LosslessNumber (from
 * parseJson), as strings (query strings, wallets that quote ids) or, from trusted in-process
 * callers, as safe integers; outputs are canonical decimal strings.
 */
export const U64_MAX = 18446744073709551615n;

const DIGITS = /^(0|[1-9][0-9]*)$/;
const DECIMAL = /^(0|[1-9][0-9]*)(\.[0-9]+)?$/;

function numericText(value: unknown): string | undefined {
  if (value instanceof LosslessNumber) return value.value;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  return undefined;
}

/** Unsigned integer id up to 2^64−1, as its decimal string; undefined for anything else. */
export function u64Text(value: unknown): string | undefined {
  const text = numericText(value);
  // Without leading zeros, 19 digits or fewer is below 2^64−1 (20 digits): no BigInt for those.
  return text === undefined || !DIGITS.test(text) || (text.length >= 20 && (text.length > 20 || BigInt(text) > U64_MAX)) ? undefined : text;
}

/** Unsigned integer id up to 2^64−1, as its decimal string. */
export const u64 = z.unknown().transform((value, ctx): string => {
  const text = u64Text(value);
  if (text === undefined) {
    ctx.addIssue({ code: 'custom', message: 'must be an unsigned integer up to 18446744073709551615' });
    return z.NEVER;
  }
  return text;
});

/** An unsigned decimal as its exact text (digits, an optional fraction, no exponent); undefined for anything else. */
export function decimalTextOf(value: unknown): string | undefined {
  let text: string | undefined;
  if (value instanceof LosslessNumber) text = value.value;
  else if (typeof value === 'number' && Number.isFinite(value) && value >= 0) text = String(value);
  else if (typeof value === 'string') text = value;
  return text !== undefined && DECIMAL.test(text) ? text : undefined;
}

/** Unsigned decimal (an amount or a balance) as its exact text: digits, an optional fraction, no exponent. */
export const decimalText = z.unknown().transform((value, ctx): string => {
  const text = decimalTextOf(value);
  if (text === undefined) {
    ctx.addIssue({ code: 'custom', message: 'must be a non-negative decimal number without exponent' });
    return z.NEVER;
  }
  return text;
});

/** A JSON number that may be a LosslessNumber, as a safe integer (codes, counts); undefined for anything else. */
export function smallIntOf(value: unknown): number | undefined {
  const text = numericText(value);
  const n = text !== undefined && DIGITS.test(text) ? Number(text) : NaN;
  return Number.isSafeInteger(n) ? n : undefined;
}

/** A JSON number that may be a LosslessNumber, read as a safe integer (codes, counts). */
export const smallInt = z.unknown().transform((value, ctx): number => {
  const n = smallIntOf(value);
  if (n === undefined) {
    ctx.addIssue({ code: 'custom', message: 'must be an unsigned integer' });
    return z.NEVER;
  }
  return n;
});

/**
 * A zod schema behind a hand-written check of the one shape nearly every input on a hot path has
 * (a well-formed bet, a wallet's success): what the check accepts whole, it answers with exactly
 * the schema's output; anything else, odd or wrong, goes to the schema, which alone refuses and
 * names the fields. The check never refuses. Each check is compared with its schema on generated
 * inputs (test/unit/fast-paths.test.ts).
 */
export interface FastParser<T> {
  readonly schema: z.ZodType<T>;
  /** The schema's output when the check accepts the input whole; undefined: ask the schema. */
  readonly fast: (input: unknown) => T | undefined;
  safeParse(input: unknown): z.ZodSafeParseResult<T>;
  /** As zod's: the output, or throws the schema's ZodError. */
  parse(input: unknown): T;
}

export function withFastPath<T>(schema: z.ZodType<T>, fast: (input: unknown) => T | undefined): FastParser<T> {
  return {
    schema,
    fast,
    safeParse(input) {
      const data = fast(input);
      return data === undefined ? schema.safeParse(input) : { success: true, data };
    },
    parse(input) {
      return fast(input) ?? schema.parse(input);
    },
  };
}

/** A plain JSON object (what parseJson makes of `{…}`): not null, not an array, not a LosslessNumber. */
export function isPlainRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}
