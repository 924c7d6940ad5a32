import type { Logger } from './logger';

/**
 * A handler for a client's 'error' event (ioredis, a BullMQ queue): logged, never dropped, but at
 * most once per `everyMs`, with how many more came in between. A Redis restart makes every
 * connection emit an error per reconnect attempt; one line per 10 s says the same.
 */
export function throttledErrorLog(logger: Logger, what: string, everyMs = 10_000, now: () => number = Date.now): (err: Error) => void {
  let lastAt = Number.NEGATIVE_INFINITY;
  let folded = 0;
  return (err) => {
    if (now() - lastAt < everyMs) {
      folded += 1;
      return;
    }
    logger.warn({ err: { message: err.message, code: (err as { code?: unknown }).code }, suppressed: folded }, what);
    lastAt = now();
    folded = 0;
  };
}
