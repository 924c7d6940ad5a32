import pino, { type Logger } from 'pino';
import { context, trace } from '../lib/tracing';

export type { Logger };

/**
 * Paths pino censors in every log line. Tokens, secrets and Authorization never reach a log;
 * bodies are not logged at all (they carry the wallet token).
 */
export const REDACT_PATHS = [
  'token',
  '*.token',
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-request-signature"]',
  'headers.authorization',
  'headers["x-request-signature"]',
  'req.query.token',
  'query.token',
  'password',
  '*.password',
  'secret',
  '*.secret',
  'walletBody',
  '*.walletBody',
  'body',
  '*.body',
];

/**
 * pino's error serializer, less what an error carries of the command that failed: ioredis puts a
 * failed command's `args` on its errors (a claim's arguments hold the record and its wallet body,
 * the token with them), out of reach of the redaction paths. The command's name stays.
 */
export function serializeError(err: unknown): unknown {
  return withoutCommandArgs(err instanceof Error ? pino.stdSerializers.err(err) : err, 0);
}

function withoutCommandArgs(value: unknown, depth: number): unknown {
  if (value === null || typeof value !== 'object' || depth > 4) return value;
  if (Array.isArray(value)) return value.map((v) => withoutCommandArgs(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    out[key] = key === 'command' && v !== null && typeof v === 'object' ? { name: (v as { name?: unknown }).name } : withoutCommandArgs(v, depth + 1);
  }
  return out;
}

export interface LoggerOptions {
  level: string;
  name: string;
  /** Where lines go; defaults to an async stdout destination so logging stays off the hot path. */
  destination?: pino.DestinationStream;
  /**
   * For the default destination: gather this many bytes before a write (one write per dozen lines
   * instead of one per line under load). The caller then owns a `flush()` on a short timer and at
   * exit; lines still in the buffer are lost if the process is killed.
   */
  bufferBytes?: number;
  /** Tracing is on in this process: every line written inside a span names its trace_id and span_id. */
  traced?: boolean;
}

/** The active span's ids, for pino's mixin: lines and traces join on them. A new object each time: pino merges the line into it. */
function traceIds(): object {
  const span = trace.getSpan(context.active());
  if (span === undefined) return {};
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}

/**
 * Lines gathered into batches of about `bytes` before they reach stdout's sonic-boom, one string per
 * batch. Not sonic-boom's own batching (minLength): it measures its whole pending batch again for
 * each line it appends (Buffer.byteLength of a growing concatenation, flattened anew each time),
 * which cost ~3 µs of CPU and a few KiB of garbage per line; here a line is one array push. Every
 * line of the logger goes through here, so lines keep their order; a flush, and the process's exit,
 * hand the batch under way to sonic-boom first.
 */
class LineBatches {
  private pending: string[] = [];
  private size = 0;

  constructor(
    private readonly out: ReturnType<typeof pino.destination>,
    private readonly bytes: number,
  ) {
    process.once('exit', () => this.flushSync());
  }

  write(line: string): void {
    this.pending.push(line);
    this.size += line.length;
    if (this.size >= this.bytes) this.handOver();
  }

  flush(done?: (err?: Error) => void): void {
    this.handOver();
    this.out.flush(done);
  }

  flushSync(): void {
    this.handOver();
    this.out.flushSync();
  }

  private handOver(): void {
    if (this.pending.length === 0) return;
    const batch = this.pending.join('');
    this.pending = [];
    this.size = 0;
    this.out.write(batch);
  }
}

/** Lines onto `out` in batches of about `bytes` (LineBatches). */
export const batchedLines = (out: ReturnType<typeof pino.destination>, bytes: number): pino.DestinationStream => new LineBatches(out, bytes);

function stdoutDestination(bufferBytes: number): pino.DestinationStream {
  const out = pino.destination({ dest: 1, sync: false });
  return bufferBytes === 0 ? out : batchedLines(out, bufferBytes);
}

export function createLogger(options: LoggerOptions): Logger {
  const destination = options.destination ?? stdoutDestination(options.bufferBytes ?? 0);
  return pino(
    {
      name: options.name,
      level: options.level,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      serializers: { err: serializeError },
      base: { pid: process.pid },
      // Only with tracing on: with it off a line pays for no mixin.
      ...(options.traced === true ? { mixin: traceIds } : {}),
    },
    destination,
  );
}

/** Log bytes gathered per stdout write in a busy process (a line or two per request or retry). */
const BUSY_BUFFER_BYTES = 4096;
/** Buffered lines reach stdout at the latest this often. */
const BUSY_FLUSH_MS = 250;

/**
 * The logger of a process that writes lines per request or per job (a gateway worker, a background
 * worker): one stdout write per dozen lines instead of one per line. The owner still flushes at
 * exit; a SIGKILL loses at most BUSY_FLUSH_MS of lines (never state: that is in Redis).
 */
export function createBusyLogger(options: Pick<LoggerOptions, 'level' | 'name' | 'traced'>): Logger {
  const logger = createLogger({ ...options, bufferBytes: BUSY_BUFFER_BYTES });
  setInterval(() => logger.flush(), BUSY_FLUSH_MS).unref();
  return logger;
}

/**
 * The same destination, level, bound fields and trace ids without the redaction pass, for the lines
 * of a retry in the worker. Their fields are picked one by one — ids, codes, states — so nothing
 * there can hold a token, a body or a header, and redaction with wildcard paths costs more than the
 * rest of such a line (≈5 µs of 8).
 */
export function unredactedSibling(logger: Logger): Logger {
  const stream = (logger as unknown as Record<symbol, pino.DestinationStream>)[pino.symbols.streamSym];
  const mixin = (logger as unknown as Record<symbol, (() => object) | undefined>)[pino.symbols.mixinSym];
  const { pid, ...bindings } = logger.bindings() as { pid?: number } & Record<string, unknown>;
  return pino({ level: logger.level, base: { pid: pid ?? process.pid }, ...(mixin === undefined ? {} : { mixin }) }, stream).child(bindings);
}

export type LineLevel = 'info' | 'warn' | 'error';

/**
 * Writes the two lines of a fixed shape that come per request (the request line, the wallet-call
 * line) by hand, onto the logger's own destination, byte for byte what pino writes for the same
 * fields (test/unit/log-lines.test.ts compares the two): pino's per-line work (its key walk,
 * serializer and stringifier lookups, message formatting) and its redaction pass cost more than
 * such a line itself. The caller picks every field one by one — ids, codes, timings, a path
 * without its query — so nothing there can hold a token, a body or a header.
 */
export interface LineWriter {
  /** The logger writes lines of this level (its level now). */
  enabled(level: LineLevel): boolean;
  /**
   * `{"level":N,"time":T` + the logger's bound fields + the trace ids (tracing on) + `fields` +
   * `,"msg":…}`. `fields` is `,"key":value…` built with logString, logNumber and JSON.stringify.
   */
  write(level: LineLevel, fields: string, msg: string): void;
}

export function lineWriter(logger: Logger): LineWriter {
  const internals = logger as unknown as Record<symbol, unknown>;
  const stream = internals[pino.symbols.streamSym] as pino.DestinationStream;
  const bindings = internals[pino.symbols.chindingsSym] as string;
  const mixin = internals[pino.symbols.mixinSym] as (() => object) | undefined;
  const levels = logger.levels.values;
  return {
    enabled: (level) => levels[level]! >= logger.levelVal,
    write(level, fields, msg) {
      const head = `{"level":${levels[level]!},"time":${Date.now()}${bindings}`;
      stream.write(`${head}${mixin === undefined ? '' : mixinFields(mixin())}${fields},"msg":${logString(msg)}}\n`);
    },
  };
}

/** A mixin's fields as pino writes them ahead of the line's own (this project's: the trace ids, or none). */
function mixinFields(fields: object): string {
  let out = '';
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined || typeof value === 'function') continue;
    const text = typeof value === 'string' ? logString(value) : typeof value === 'number' ? logNumber(value) : typeof value === 'boolean' ? String(value) : JSON.stringify(value);
    out += `,${logString(key)}:${text}`;
  }
  return out;
}

/** A string field or message as pino writes it: quoted with `"` and `\` escaped; JSON.stringify when longer than 100 or holding a control character. */
export function logString(text: string): string {
  if (text.length > 100) return JSON.stringify(text);
  let out = '';
  let last = 0;
  let escaped = false;
  for (let i = 0; i < text.length; i += 1) {
    const code = text.charCodeAt(i);
    if (code < 32) return JSON.stringify(text);
    if (code === 34 || code === 92) {
      out += `${text.slice(last, i)}\\`;
      last = i;
      escaped = true;
    }
  }
  return `"${escaped ? out + text.slice(last) : text}"`;
}

/** A number field as pino writes it: null when not finite. */
export const logNumber = (value: number): string => (Number.isFinite(value) ? String(value) : 'null');
