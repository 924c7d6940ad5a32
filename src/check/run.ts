import { addAmounts } from '../lib/money';
import { CHECKS, newCheckState, type CheckDefinition } from './checks';
import { openProbe, type ProbeOptions } from './probe';

/**
 * Runs the checks in order against one wallet and one test player, and says what each found.
 * A warn-only check that fails is a WARN; the run passes when no required check failed.
 */
export type Verdict = 'PASS' | 'FAIL' | 'WARN';

export interface CheckLine {
  readonly name: string;
  readonly title: string;
  readonly required: boolean;
  readonly result: Verdict;
  /** The wallet's code of the answer the line is about (null: none, or no usable answer). */
  readonly code: number | null;
  readonly request_id: string | null;
  readonly http_status: number | null;
  readonly detail: string;
  /** What was expected, on a FAIL or WARN. */
  readonly expected: string | null;
}

export interface CheckReport {
  readonly wallet: string;
  /** The run's id prefix: every round and transaction id the run sent starts with it. */
  readonly run_id: string;
  readonly checks: readonly CheckLine[];
  /** The balance authenticate gave and the one terminate gave, and what moved in between (0 when all was given back). */
  readonly start_balance: string | null;
  readonly end_balance: string | null;
  readonly net: string | null;
  readonly failed_required: readonly string[];
  readonly passed: boolean;
}

export interface RunOptions extends ProbeOptions {
  readonly walletId: string;
  /** The checks to run; the contract's list by default. */
  readonly checks?: readonly CheckDefinition[];
}

export async function runWalletCheck(options: RunOptions): Promise<CheckReport> {
  const probe = openProbe(options);
  const state = newCheckState();
  const lines: CheckLine[] = [];
  try {
    for (const check of options.checks ?? CHECKS) {
      probe.setCheck(check.name);
      const found = await check.run(probe, state);
      const result: Verdict = found.verdict === 'pass' ? 'PASS' : found.verdict === 'warn' || !check.required ? 'WARN' : 'FAIL';
      lines.push({
        name: check.name,
        title: check.title,
        required: check.required,
        result,
        code: found.shown?.code ?? null,
        request_id: found.shown?.requestId ?? null,
        http_status: found.shown?.httpStatus ?? null,
        detail: found.detail,
        expected: result === 'PASS' ? null : (found.expected ?? null),
      });
    }
  } finally {
    await probe.close();
  }
  const failed = lines.filter((line) => line.result === 'FAIL').map((line) => line.name);
  const { startBalance, endBalance } = state;
  return {
    wallet: options.walletId,
    run_id: options.ids.runId,
    checks: lines,
    start_balance: startBalance ?? null,
    end_balance: endBalance ?? null,
    net: startBalance === undefined || endBalance === undefined ? null : addAmounts(endBalance, startBalance, -1),
    failed_required: failed,
    passed: failed.length === 0,
  };
}
