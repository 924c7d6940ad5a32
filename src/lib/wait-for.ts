/**
 * Polls `probe` until it gives a value (anything but undefined or false) and resolves with it: the
 * one "wait with a deadline" of the tools, harnesses and tests, instead of a fixed sleep. A probe
 * that throws counts as "not yet" (a server still starting refuses connections); its last error is
 * in the timeout message.
 */
export interface WaitOptions {
  /** Between two probes; default 25 ms. */
  readonly intervalMs?: number;
  /** False once waiting is pointless (the process that should answer exited): fail at once. */
  readonly alive?: () => boolean;
  /** More to say when it fails (a process's last output). */
  readonly context?: () => string;
}

export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 15_000,
  options: WaitOptions = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      lastError = err;
    }
    const why = options.alive !== undefined && !options.alive() ? 'the process exited' : Date.now() > deadline ? `not within ${timeoutMs} ms` : undefined;
    if (why !== undefined) {
      const cause = lastError === undefined ? '' : ` (last error: ${lastError instanceof Error ? lastError.message : String(lastError)})`;
      const context = options.context?.() ?? '';
      throw new Error(`waiting for ${what}: ${why}${cause}${context === '' ? '' : `\n${context}`}`);
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 25));
  }
}
