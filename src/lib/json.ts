import { LosslessNumber, parse, stringify } from 'lossless-json';

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

/** Serialises plain values; LosslessNumber and bigint are written as raw JSON numbers. */
export function stringifyJson(value: unknown): string {
  const out = stringify(value);
  if (out === undefined) throw new TypeError('value is not JSON-serialisable');
  return out;
}

/** A JSON number whose text is exactly `digits` (an id or amount already validated as decimal text). */
export function jsonNumber(text: string): LosslessNumber {
  return new LosslessNumber(text);
}
