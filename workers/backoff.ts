import type { BackoffStrategy } from 'bullmq';

/**
 * A job that must run again after `delayMs`. The processor throws it with the delay the pure retry
 * policy chose (via src/duties/settlement.ts); the worker's backoff strategy hands that delay to BullMQ.
 */
export class RetryLater extends Error {
  override readonly name = 'RetryLater';
  constructor(
    readonly delayMs: number,
    reason: string,
  ) {
    super(reason);
  }
}

/** Delay after an unexpected error (Redis away mid-job, a bug): not a wallet answer, so not the spec's table. */
export const UNEXPECTED_ERROR_DELAY_MS = 5_000;

/**
 * settings.backoffStrategy of every worker. BullMQ calls it with n = 1 on the first failure; n is
 * not used: the record's history, not BullMQ's count, is the retry budget.
 */
export const backoffStrategy: BackoffStrategy = (_attemptsMade, _type, err) =>
  err instanceof RetryLater ? err.delayMs : UNEXPECTED_ERROR_DELAY_MS;
