import { parseArgs } from 'node:util';
import { z } from 'zod';
import { u64 } from '../lib/schemas';

/**
 * The flags of `npm run wallet-check`, parsed by zod at the edge. An error names the flag and what
 * is wrong with it, never the value given (the token is a secret).
 */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export const USAGE = [
  'usage: npm run wallet-check -- [--wallet ID] --token T --player-id P --site-id S --currency C --game-id G [--amount A] [--json]',
  '  --wallet ID    the wallet to check (default: the single-wallet WALLET_* variables, id "default")',
  '  --token T      a fresh test token the casino issued for the test player',
  '  --player-id P  the test player (unsigned integer up to 18446744073709551615)',
  '  --site-id S    the test player\'s site (unsigned integer up to 18446744073709551615)',
  '  --currency C   the test player\'s currency (e.g. EUR)',
  '  --game-id G    a game id the casino knows',
  '  --amount A     the stake of the test debits (default 1; every amount moved is given back)',
  '  --json         print the result as one JSON document',
].join('\n');

/** Registry wallet ids (contract 11): 1–32 characters of [a-z0-9-]. */
export const walletIdSchema = z.string().regex(/^[a-z0-9-]{1,32}$/, 'must be 1-32 characters of a-z, 0-9 and -');

const argsSchema = z.strictObject({
  wallet: walletIdSchema.optional(),
  token: z.string().min(1, 'must not be empty'),
  'player-id': u64,
  'site-id': u64,
  currency: z.string().regex(/^[A-Za-z0-9]{2,10}$/, 'must be 2-10 letters or digits'),
  'game-id': z.string().min(1, 'must not be empty'),
  amount: z
    .string()
    .regex(/^(0|[1-9][0-9]*)(\.[0-9]+)?$/, 'must be a decimal like 1 or 0.10')
    .refine((text) => /[1-9]/.test(text), 'must be more than 0')
    .default('1'),
  json: z.boolean().default(false),
});

export interface CheckArgs {
  /** undefined: no --wallet given. */
  readonly wallet: string | undefined;
  readonly token: string;
  readonly playerId: string;
  readonly siteId: string;
  readonly currency: string;
  readonly gameId: string;
  readonly amount: string;
  readonly json: boolean;
}

const STRING_FLAGS = ['wallet', 'token', 'player-id', 'site-id', 'currency', 'game-id', 'amount'] as const;

/** 'help' for --help; throws UsageError naming the flag for anything else that is wrong. */
export function parseCheckArgs(argv: readonly string[]): CheckArgs | 'help' {
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({
      args: [...argv],
      options: {
        ...Object.fromEntries(STRING_FLAGS.map((flag) => [flag, { type: 'string' as const }])),
        json: { type: 'boolean' },
        help: { type: 'boolean' },
      },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (err) {
    // node's messages name the flag ("Unknown option '--x'", "Option '--token <value>' argument missing").
    throw new UsageError(`${(err as Error).message}\n${USAGE}`);
  }
  if (values.help === true) return 'help';
  delete values.help;
  const parsed = argsSchema.safeParse(values);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => {
      const flag = String(issue.path[0] ?? '');
      const missing = values[flag] === undefined;
      return `  --${flag}: ${missing ? 'required' : issue.message}`;
    });
    throw new UsageError(`invalid arguments:\n${lines.join('\n')}\n${USAGE}`);
  }
  const a = parsed.data;
  return {
    wallet: a.wallet,
    token: a.token,
    playerId: a['player-id'],
    siteId: a['site-id'],
    currency: a.currency,
    gameId: a['game-id'],
    amount: a.amount,
    json: a.json,
  };
}
