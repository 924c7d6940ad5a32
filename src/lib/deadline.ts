/** Thrown by withDeadline when the promise did not settle in time. */
export class DeadlineError extends Error {
  override readonly name = 'DeadlineError';
}

/**
 * The promise's outcome, or a DeadlineError after `ms`. For reads whose client waits for Redis to
 * come back (BullMQ connections retry forever) where the caller must answer now.
 */
export function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineError(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}
