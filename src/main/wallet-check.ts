import { UsageError, USAGE, parseCheckArgs } from '../check/args';
import { renderJson, renderText } from '../check/report';
import { runWalletCheck } from '../check/run';
import { newRunIds } from '../check/run-ids';
import { resolveWalletTarget } from '../check/wallet-target';
import { ConfigError } from '../config/env';
import { EXIT_CODES } from '../lib/lifecycle';
import { createWalletClient } from '../wallet/client';

/**
 * `npm run wallet-check`: the protocol's checks against a live wallet with one test player
 * (contract 15; docs/operators.md, "Onboarding a casino"). Exit 0 when every required check
 * passed, 1 when one failed, 2 for bad flags or configuration (nothing was sent).
 */
async function main(argv: readonly string[]): Promise<number> {
  let args;
  let target;
  try {
    args = parseCheckArgs(argv);
    if (args === 'help') {
      process.stdout.write(`${USAGE}\n`);
      return EXIT_CODES.ok;
    }
    target = resolveWalletTarget(args.wallet, process.env);
  } catch (err) {
    if (err instanceof UsageError || err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      return EXIT_CODES.config;
    }
    throw err;
  }
  const { settings } = target;
  const report = await runWalletCheck({
    walletId: target.id,
    settings,
    providerId: target.providerId,
    player: args,
    amount: args.amount,
    ids: newRunIds(),
    openClient: createWalletClient,
  });
  // The origin alone: a base URL may carry user:password@.
  const origin = new URL(settings.WALLET_BASE_URL).origin;
  const text = args.json ? renderJson(report, origin) : renderText(report, origin);
  process.stdout.write(text);
  return report.passed ? EXIT_CODES.ok : EXIT_CODES.failed;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`wallet-check failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = EXIT_CODES.failed;
  },
);
