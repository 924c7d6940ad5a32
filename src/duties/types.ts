import type { ShardRef } from '../store/transactions';

/**
 * What the engine use cases ask of the background: the queue producers. The worker side
 * (workers/) decides how the jobs run; the engine only says what must happen, durably.
 */
export interface Duties {
  /**
   * Queue the wallet retries of a pending record (a credit, a rollback, or a debit's compensation),
   * first run after `delayMs`. Resolves once the job is in Redis; a second call for the same record
   * does not make a second job. The record's player names the shard of its queue.
   */
  enqueueRetry(record: ShardRef, delayMs: number): Promise<void>;
  /**
   * Make sure a terminate job drives the wallet token: it sends the terminate once every session on
   * the token ended and the token's work settled, and retries it (contract 5.6).
   */
  enqueueTerminate(tokenRef: string): Promise<void>;
  close(): Promise<void>;
}
