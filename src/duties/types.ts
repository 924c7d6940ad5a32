/**
 * What the engine use cases ask of the background: the queue producers. The worker side
 * (workers/) decides how the jobs run; the engine only says what must happen, durably.
 */
export interface Duties {
  /**
   * Queue the wallet retries of a pending record (a credit, a rollback, or a debit's compensation),
   * first run after `delayMs`. Resolves once the job is in Redis; a second call for the same record
   * does not make a second job.
   */
  enqueueRetry(transactionId: string, delayMs: number): Promise<void>;
  /** Queue the terminate of an `ending` session; it runs once the session's pending work settled. */
  enqueueTerminate(sessionId: string): Promise<void>;
  close(): Promise<void>;
}
