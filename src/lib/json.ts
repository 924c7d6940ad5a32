import { LosslessNumber, isLosslessNumber } from 'lossless-json';

/**
 * JSON without lossy numbers. Every number is read as its exact source text (a LosslessNumber),
 * so ids up to 2^64−1 and amounts like 10.50 are never squeezed through a float; writing emits
 * that text unchanged. Schemas at the edges (see ./schemas) turn these into domain strings.
 */
export { LosslessNumber };

export class JsonSyntaxError extends Error {
  override readonly name = 'JsonSyntaxError';
}

/**
 * lossless-json's `parse(text, undefined, (n) => new LosslessNumber(n))`, the same grammar and the
 * same result: every number a LosslessNumber of its source text, a repeated key an error unless
 * both values are deep-equal, `__proto__` an own property. Hand-written because lossless-json
 * builds every string one character at a time: about a tenth of all a bet allocated (bench
 * `--alloc`). Here a string without escapes is one slice. The unit tests check it against
 * lossless-json on a table and on seeded random texts, valid and not. One difference: nesting
 * deeper than MAX_DEPTH is refused as bad JSON (lossless-json's limit was the call stack, and
 * overflowing it threw a RangeError).
 */
export function parseJson(text: string): unknown {
  try {
    return new JsonParser(text).document();
  } catch (err) {
    // Whatever else goes wrong reading a text is still "not JSON we take", never a crash of the caller.
    if (err instanceof JsonSyntaxError) throw err;
    throw new JsonSyntaxError(err instanceof Error ? err.message : String(err));
  }
}

/** Arrays and objects inside each other: far more than any wallet or engine body has. */
export const MAX_DEPTH = 512;

const ESCAPED: Readonly<Record<string, string>> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;
const isHex = (c: number): boolean => (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);

class JsonParser {
  private i = 0;
  private depth = 0;

  constructor(private readonly text: string) {}

  document(): unknown {
    const value = this.value();
    if (this.i < this.text.length) this.fail('end of input expected');
    return value;
  }

  private fail(what: string): never {
    throw new JsonSyntaxError(`${what} at position ${this.i}`);
  }

  private skipWhitespace(): void {
    let c = this.text.charCodeAt(this.i);
    while (c === 0x20 || c === 0x0a || c === 0x09 || c === 0x0d) c = this.text.charCodeAt(++this.i);
  }

  private value(): unknown {
    this.skipWhitespace();
    const c = this.text.charCodeAt(this.i);
    let value: unknown;
    if (c === 0x22) value = this.string();
    else if (c === 0x2d || isDigit(c)) value = this.number();
    else if (c === 0x7b) value = this.object();
    else if (c === 0x5b) value = this.array();
    else if (this.text.startsWith('true', this.i)) value = this.keyword(4, true);
    else if (this.text.startsWith('false', this.i)) value = this.keyword(5, false);
    else if (this.text.startsWith('null', this.i)) value = this.keyword(4, null);
    else this.fail('JSON value expected');
    this.skipWhitespace();
    return value;
  }

  private keyword<T>(length: number, value: T): T {
    this.i += length;
    return value;
  }

  private string(): string {
    const { text } = this;
    const start = ++this.i;
    let out = '';
    let from = start;
    for (;;) {
      const c = text.charCodeAt(this.i);
      if (c === 0x22) break;
      if (Number.isNaN(c)) this.fail('end of string expected');
      if (c < 0x20) this.fail('invalid character in a string');
      if (c === 0x5c) {
        out += text.slice(from, this.i);
        const escape = text[this.i + 1] ?? '';
        const simple = Object.hasOwn(ESCAPED, escape) ? ESCAPED[escape] : undefined;
        if (simple !== undefined) {
          out += simple;
          this.i += 2;
        } else if (escape === 'u' && isHex(text.charCodeAt(this.i + 2)) && isHex(text.charCodeAt(this.i + 3)) && isHex(text.charCodeAt(this.i + 4)) && isHex(text.charCodeAt(this.i + 5))) {
          out += String.fromCharCode(Number.parseInt(text.slice(this.i + 2, this.i + 6), 16));
          this.i += 6;
        } else {
          this.fail('invalid escape');
        }
        from = this.i;
        continue;
      }
      this.i += 1;
    }
    const value = from === start ? text.slice(start, this.i) : out + text.slice(from, this.i);
    this.i += 1;
    return value;
  }

  private digits(): void {
    if (!isDigit(this.text.charCodeAt(this.i))) this.fail('digit expected');
    while (isDigit(this.text.charCodeAt(this.i))) this.i += 1;
  }

  private number(): LosslessNumber {
    const { text } = this;
    const start = this.i;
    if (text.charCodeAt(this.i) === 0x2d) this.i += 1;
    if (text.charCodeAt(this.i) === 0x30) this.i += 1;
    else this.digits();
    if (text.charCodeAt(this.i) === 0x2e) {
      this.i += 1;
      this.digits();
    }
    const e = text.charCodeAt(this.i);
    if (e === 0x65 || e === 0x45) {
      this.i += 1;
      const sign = text.charCodeAt(this.i);
      if (sign === 0x2d || sign === 0x2b) this.i += 1;
      this.digits();
    }
    return new LosslessNumber(text.slice(start, this.i));
  }

  private enter(): void {
    this.depth += 1;
    if (this.depth > MAX_DEPTH) this.fail(`nested deeper than ${MAX_DEPTH}`);
  }

  private object(): Record<string, unknown> {
    this.enter();
    this.i += 1;
    this.skipWhitespace();
    const object: Record<string, unknown> = {};
    let first = true;
    while (this.i < this.text.length && this.text.charCodeAt(this.i) !== 0x7d) {
      if (!first) {
        if (this.text.charCodeAt(this.i) !== 0x2c) this.fail("',' expected");
        this.i += 1;
        this.skipWhitespace();
      }
      first = false;
      if (this.text.charCodeAt(this.i) !== 0x22) this.fail('quoted object key expected');
      const key = this.string();
      this.skipWhitespace();
      if (this.text.charCodeAt(this.i) !== 0x3a) this.fail("':' expected");
      this.i += 1;
      const value = this.value();
      // A repeat with an equal value takes the later one, as lossless-json does (`[1]` equals `{"0":1}` there).
      if (Object.hasOwn(object, key) && !deepEqual(value, object[key])) this.fail(`duplicate key '${key}'`);
      if (key === '__proto__') {
        // An own property, as JSON.parse makes it: assigning would set the prototype.
        Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
      } else {
        object[key] = value;
      }
    }
    if (this.text.charCodeAt(this.i) !== 0x7d) this.fail("'}' expected");
    this.i += 1;
    this.depth -= 1;
    return object;
  }

  private array(): unknown[] {
    this.enter();
    this.i += 1;
    this.skipWhitespace();
    const array: unknown[] = [];
    let first = true;
    while (this.i < this.text.length && this.text.charCodeAt(this.i) !== 0x5d) {
      if (!first) {
        if (this.text.charCodeAt(this.i) !== 0x2c) this.fail("',' expected");
        this.i += 1;
      }
      first = false;
      array.push(this.value());
    }
    if (this.text.charCodeAt(this.i) !== 0x5d) this.fail("']' expected");
    this.i += 1;
    this.depth -= 1;
    return array;
  }
}

/** lossless-json's rule for a repeated key: allowed when both values are equal, numbers by their text. */
function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((item, k) => deepEqual(item, b[k]));
  if (typeof a === 'object' && a !== null && typeof b === 'object' && b !== null) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    return [...keys].every((key) => deepEqual((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]));
  }
  return false;
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
