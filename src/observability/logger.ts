import pino, { type Logger } from 'pino';

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

export interface LoggerOptions {
  level: string;
  name: string;
  /** Where lines go; defaults to an async stdout destination so logging stays off the hot path. */
  destination?: pino.DestinationStream;
}

export function createLogger(options: LoggerOptions): Logger {
  const destination = options.destination ?? pino.destination({ dest: 1, sync: false });
  return pino(
    {
      name: options.name,
      level: options.level,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      base: { pid: process.pid },
    },
    destination,
  );
}
