import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The request a piece of work runs for, so a wallet call's log line can carry the gateway's
 * request_id without threading it through every use case.
 */
const storage = new AsyncLocalStorage<{ readonly requestId: string }>();

export function runWithRequestId<T>(requestId: string, fn: () => T): T {
  return storage.run({ requestId }, fn);
}

export function currentRequestId(): string | undefined {
  return storage.getStore()?.requestId;
}
