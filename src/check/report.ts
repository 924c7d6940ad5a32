import type { CheckReport } from './run';

/**
 * The check's output: one line per check, or one JSON document. No secret is in a report: the
 * client scrubs the token from wallet messages and request ids, the probe the other secrets, and
 * the wallet is named by its origin (a base URL may carry user:password@).
 */
export function renderText(report: CheckReport, walletOrigin: string): string {
  const width = Math.max(...report.checks.map((c) => c.name.length + (c.required ? 0 : ' (warn-only)'.length)));
  const lines = report.checks.map((c) => {
    const name = `${c.name}${c.required ? '' : ' (warn-only)'}`.padEnd(width);
    const expected = c.expected === null ? '' : ` | expected: ${c.expected}`;
    return `${c.result}  ${name}  code=${c.code ?? '-'} request_id=${c.request_id ?? '-'}  ${c.detail}${expected}`;
  });
  const net =
    report.net === null
      ? 'net: unknown (no start or end balance)'
      : `net: ${report.net} (balance ${report.start_balance} at authenticate, ${report.end_balance} at terminate)`;
  const verdict = report.passed ? 'passed: every required check passed' : `FAILED: ${report.failed_required.join(', ')}`;
  return [`wallet-check: wallet "${report.wallet}" at ${walletOrigin}, run ${report.run_id}`, ...lines, net, verdict, ''].join('\n');
}

export function renderJson(report: CheckReport, walletOrigin: string): string {
  return `${JSON.stringify({ ...report, wallet_origin: walletOrigin }, null, 2)}\n`;
}
