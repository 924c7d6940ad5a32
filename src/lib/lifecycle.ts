import { ConfigError } from './config-error';

/**
 * One lifecycle for every process and test harness (the model: BullMQ's Worker.close()).
 *
 * - A closer stack: whatever is opened is `defer`red right after it opened; `closeAll()` closes in
 *   reverse order, once (later calls share the first call's promise). Each step is isolated: one
 *   that throws is reported and the steps after it still run, so a failing close never leaves Redis,
 *   the wallet pool or a port open. A start that fails half-way closes what it had opened.
 * - `runUntilSignal` for the process entries: SIGTERM/SIGINT stop the process once, in order, and
 *   the exit code says how it ended (EXIT_CODES); SIGHUP asks it to reload (`Running.reload`).
 */
export type CloseStep = () => Promise<unknown> | void;

/** Where a failed close step is told; the process's logger, or stderr. */
export type CloseReport = (step: string, err: unknown) => void;

/** One or more close steps failed (each was reported as it failed); every other step ran. */
export class CloseError extends AggregateError {
  override readonly name = 'CloseError';
}

export interface Closers {
  /** Registers the close step of something just opened; closeAll runs the steps last in, first out. */
  defer(name: string, close: CloseStep): void;
  /** Runs every step once, in reverse order; rejects with a CloseError when any step failed. */
  closeAll(): Promise<void>;
}

export function createClosers(report: CloseReport = reportToStderr): Closers {
  const steps: { name: string; close: CloseStep }[] = [];
  let closing: Promise<void> | undefined;

  async function runAll(): Promise<void> {
    const failed: unknown[] = [];
    for (const step of steps.splice(0).reverse()) {
      try {
        await step.close();
      } catch (err) {
        report(step.name, err);
        failed.push(err);
      }
    }
    if (failed.length > 0) throw new CloseError(failed, `${failed.length} close step(s) failed`);
  }

  return {
    defer(name, close) {
      // A step deferred after closeAll began would never run: that is a wiring bug, not a shutdown.
      if (closing !== undefined) throw new Error(`defer("${name}") after closeAll()`);
      steps.push({ name, close });
    },
    closeAll: () => (closing ??= runAll()),
  };
}

function reportToStderr(step: string, err: unknown): void {
  process.stderr.write(`close step "${step}" failed: ${err instanceof Error ? err.message : String(err)}\n`);
}

/**
 * Opens with `open`, and on a failure closes what was opened before it and rethrows: the start of a
 * process or harness either returns with everything up, or throws with nothing left open.
 */
export async function startWith<T>(closers: Closers, open: () => Promise<T>): Promise<T> {
  try {
    return await open();
  } catch (err) {
    // The failed steps were reported; the start's own error is the one to throw.
    await closers.closeAll().catch(() => undefined);
    throw err;
  }
}

/**
 * The exit codes of every process entry (gateway, worker, dev, sim): 0 a clean stop, 1 a failure
 * (the start failed, or a close step did), 2 a configuration error (nothing was started).
 */
export const EXIT_CODES = Object.freeze({ ok: 0, failed: 1, config: 2 });

/** A started process entry: how it stops, and what it says while it does. */
export interface Running {
  close(): Promise<void>;
  /** Tells the person or log that the stop began (once, for the first signal). */
  readonly onSignal?: (signal: NodeJS.Signals) => void;
  /** Tells that the stop ended; `err` when it did not end cleanly. */
  readonly onStopped?: (err?: unknown) => void;
  /** Called right before the process exits (flush a buffered log). */
  readonly beforeExit?: () => void;
  /** SIGHUP with RunOptions.reloadOnHangup: reads the registry file again (contract 11). */
  readonly reload?: () => Promise<void>;
}

export interface RunOptions {
  /** Start failures whose message says it all (printed without a stack; exit 1). */
  readonly explained?: (err: unknown) => boolean;
  /** SIGHUP calls `Running.reload` instead of ending the process (the gateway and the worker). */
  readonly reloadOnHangup?: boolean;
}

const SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT'];

/**
 * Starts a process entry and keeps it up until SIGTERM or SIGINT, then closes it and exits.
 * Signals are listened for from before the start: one that arrives during the start stops the
 * process as soon as it is up, instead of killing it in the middle of a wallet call. `process.on`
 * and a flag, not `once`: a process-group signal, a forwarded one (npm, tsx, a cluster primary) or
 * a second Ctrl-C must not kill the drain of the first. A configuration error exits 2 with its
 * message; any other failed start exits 1.
 */
export function runUntilSignal(name: string, start: () => Promise<Running>, options: RunOptions = {}): void {
  const starting = start();
  let stopping = false;
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    // A start that fails is reported by the catch below.
    starting.then((running) => {
      running.onSignal?.(signal);
      const exit = (code: number): void => {
        running.beforeExit?.();
        process.exit(code);
      };
      running.close().then(
        () => {
          running.onStopped?.();
          exit(EXIT_CODES.ok);
        },
        (err: unknown) => {
          running.onStopped?.(err);
          exit(EXIT_CODES.failed);
        },
      );
    }, () => undefined);
  };
  for (const signal of SIGNALS) process.on(signal, stop);
  // Listened for from the start too (SIGHUP's default would end the process), by the entries that
  // reload; the others (dev, the simulator) still end on a hang-up, as a terminal's closing sends.
  if (options.reloadOnHangup === true) {
    process.on('SIGHUP', () => {
      starting.then((running) => (stopping ? undefined : running.reload?.()), () => undefined).catch((err: unknown) => {
        process.stderr.write(`${name}: reload failed: ${err instanceof Error ? err.message : String(err)}\n`);
      });
    });
  }
  starting.catch((err: unknown) => {
    if (err instanceof ConfigError || options.explained?.(err)) {
      process.stderr.write(`${(err as Error).message}\n`);
      process.exit(err instanceof ConfigError ? EXIT_CODES.config : EXIT_CODES.failed);
    }
    process.stderr.write(`${name} failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(EXIT_CODES.failed);
  });
}
