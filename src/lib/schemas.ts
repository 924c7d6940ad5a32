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

/** Unsigned integer id up to 2^64−1, as its decimal string. */
export const u64 = z.unknown().transform((value, ctx): string => {
  const text = numericText(value);
  if (text === undefined || !DIGITS.test(text) || BigInt(text) > U64_MAX) {
    ctx.addIssue({ code: 'custom', message: 'must be an unsigned integer up to 18446744073709551615' });
    return z.NEVER;
  }
  return text;
});

/** Unsigned decimal (an amount or a balance) as its exact text: digits, an optional fraction, no exponent. */
export const decimalText = z.unknown().transform((value, ctx): string => {
  let text: string | undefined;
  if (value instanceof LosslessNumber) text = value.value;
  else if (typeof value === 'number' && Number.isFinite(value) && value >= 0) text = String(value);
  else if (typeof value === 'string') text = value;
  if (text === undefined || !DECIMAL.test(text)) {
    ctx.addIssue({ code: 'custom', message: 'must be a non-negative decimal number without exponent' });
    return z.NEVER;
  }
  return text;
});

/** A JSON number that may be a LosslessNumber, read as a safe integer (codes, counts). */
export const smallInt = z.unknown().transform((value, ctx): number => {
  const text = numericText(value);
  const n = text !== undefined && DIGITS.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n)) {
    ctx.addIssue({ code: 'custom', message: 'must be an unsigned integer' });
    return z.NEVER;
  }
  return n;
});
