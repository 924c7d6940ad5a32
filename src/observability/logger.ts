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

export function createLogger(options: LoggerOptions): Logger {
  const destination = options.destination ?? pino.destination({ dest: 1, sync: false, minLength: options.bufferBytes ?? 0 });
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
 * The same destination, level, bound fields and trace ids without the redaction pass, for the two lines
 * written per request (the request line, the wallet-call line) only. Their fields are picked one by
 * one — ids, codes, timings, a path without its query — so nothing there can hold a token, a body or
 * a header, and redaction with wildcard paths costs more than the rest of such a line (≈5 µs of 8).
 */
export function unredactedSibling(logger: Logger): Logger {
  const stream = (logger as unknown as Record<symbol, pino.DestinationStream>)[pino.symbols.streamSym];
  const mixin = (logger as unknown as Record<symbol, (() => object) | undefined>)[pino.symbols.mixinSym];
  const { pid, ...bindings } = logger.bindings() as { pid?: number } & Record<string, unknown>;
  return pino({ level: logger.level, base: { pid: pid ?? process.pid }, ...(mixin === undefined ? {} : { mixin }) }, stream).child(bindings);
}
