import { LosslessNumber, isLosslessNumber, parse } from 'lossless-json';

/**
 * JSON without lossy numbers. Every number is read as its exact source text (a LosslessNumber),
 * so ids up to 2^64−1 and amounts like 10.50 are never squeezed through a float; writing emits
 * that text unchanged. Schemas at the edges (see ./schemas) turn these into domain strings.
 */
export { LosslessNumber };

export class JsonSyntaxError extends Error {
  override readonly name = 'JsonSyntaxError';
}

const keepText = (text: string): LosslessNumber => new LosslessNumber(text);

export function parseJson(text: string): unknown {
  try {
    return parse(text, undefined, keepText);
  } catch (err) {
    throw new JsonSyntaxError((err as Error).message);
  }
}

/**
 * Serialises plain values; LosslessNumber and bigint are written as raw JSON numbers.
 * Hand-written because lossless-json's general stringify (replacer, indent and number-stringifier
 * hooks checked on every value) was a measurable share of CPU per request. The output is the same
 * as lossless-json's stringify(value) for every value, which the unit tests check against it.
 */
export function stringifyJson(value: unknown): string {
  const out = write(value);
  if (out === undefined) throw new TypeError('value is not JSON-serialisable');
  return out;
}

/**
 * The only characters JSON.stringify escapes in a string: quote, backslash, controls below U+0020 and
 * (well-formed JSON.stringify) lone surrogates; any surrogate sends the string to JSON.stringify.
 */
// eslint-disable-next-line no-control-regex -- matching the control characters is the point
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/** JSON.stringify(text), without the native call (most of the cost) for the usual text that needs no escape. */
const quote = (text: string): string => (NEEDS_ESCAPE.test(text) ? JSON.stringify(text) : `"${text}"`);

/** undefined means "no JSON representation": skipped as a property, null as an array element. */
function write(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
      return quote(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      // JSON.stringify writes NaN and ±Infinity as null, as lossless-json does.
      return JSON.stringify(value);
    case 'bigint':
      return String(value);
    case 'object':
      return value === null ? 'null' : writeObject(value);
    default:
      return undefined;
  }
}

function writeObject(value: object): string | undefined {
  // The marker test rather than instanceof, like lossless-json: it also knows another copy's LosslessNumber.
  if (isLosslessNumber(value)) return value.value;
  if (Array.isArray(value)) return writeArray(value);
  if (value instanceof Date || value instanceof Boolean || value instanceof Number || value instanceof String) return JSON.stringify(value);
  const { toJSON } = value as { toJSON?: unknown };
  // lossless-json calls toJSON without the key argument and writes its result as a fresh value.
  if (typeof toJSON === 'function') return write(toJSON.call(value));
  let out = '';
  for (const key of Object.keys(value)) {
    const text = write((value as Record<string, unknown>)[key]);
    if (text !== undefined) out += `${out === '' ? '{' : ','}${quote(key)}:${text}`;
  }
  return out === '' ? '{}' : `${out}}`;
}

function writeArray(items: readonly unknown[]): string {
  let out = '[';
  for (let i = 0; i < items.length; i++) {
    if (i > 0) out += ',';
    out += write(items[i]) ?? 'null';
  }
  return `${out}]`;
}

/** A JSON number whose text is exactly `digits` (an id or amount already validated as decimal text). */
export function jsonNumber(text: string): LosslessNumber {
  return new LosslessNumber(text);
}
