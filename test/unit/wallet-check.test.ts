import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UsageError, parseCheckArgs } from '../../src/check/args';
import { expectedStatus } from '../../src/check/checks';
import { RUN_ID_PREFIX, newRunIds } from '../../src/check/run-ids';
import { resolveWalletTarget } from '../../src/check/wallet-target';
import { ConfigError, loadGatewayConfig } from '../../src/config/env';
import { debitFieldsSchema, MAX_ID_LENGTH } from '../../src/wallet/protocol';

/** The wallet check's pure parts: its flags, the wallet it resolves, its ids, its HTTP status rule. */
const env = {
  WALLET_BASE_URL: 'https://wallet.casino.test/base',
  WALLET_BASIC_USER: 'gw',
  WALLET_BASIC_PASSWORD: 'pw-value-1',
  WALLET_SIGNING_SECRET: 'signing-value-2',
  PROVIDER_ID: '18446744073709551615',
};
const flags = ['--token', 'secret-token-9', '--player-id', '18446744073709551615', '--site-id', '7', '--currency', 'EUR', '--game-id', 'slot-1'];

function usageErrorOf(argv: string[]): string {
  try {
    parseCheckArgs(argv);
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    return (err as Error).message;
  }
  throw new Error('the flags were accepted');
}

describe('wallet-check flags', () => {
  it('reads every flag, ids exact, amount 1 and text output by default', () => {
    expect(parseCheckArgs(flags)).toEqual({
      wallet: undefined,
      token: 'secret-token-9',
      playerId: '18446744073709551615',
      siteId: '7',
      currency: 'EUR',
      gameId: 'slot-1',
      amount: '1',
      json: false,
    });
    expect(parseCheckArgs([...flags, '--wallet', 'casino-a', '--amount', '0.10', '--json'])).toMatchObject({ wallet: 'casino-a', amount: '0.10', json: true });
    expect(parseCheckArgs(['--help'])).toBe('help');
  });

  it.each([
    [['--player-id', '18446744073709551616'], '--player-id: must be an unsigned integer'],
    [['--site-id', '1.5'], '--site-id: must be an unsigned integer'],
    [['--amount', '0'], '--amount: must be more than 0'],
    [['--amount', '1e3'], '--amount: must be a decimal'],
    [['--wallet', 'Casino_A'], '--wallet: must be 1-32 characters'],
    [['--currency', 'E'], '--currency: must be 2-10 letters or digits'],
  ])('names the flag of a bad value %j, never the value', (bad, message) => {
    const text = usageErrorOf([...flags, ...bad]);
    expect(text).toContain(message);
    expect(text).not.toContain('secret-token-9');
  });

  it('names a missing flag, and an unknown one', () => {
    expect(usageErrorOf(flags.slice(2))).toContain('--token: required');
    expect(usageErrorOf([...flags, '--tokn', 'x'])).toContain("'--tokn'");
  });
});

describe('the wallet a check talks to', () => {
  it('is wallet default of the single-wallet variables, read as the gateway reads it, without --wallet and with --wallet default', () => {
    const gateway = loadGatewayConfig({ ...env, ENGINE_API_KEY: 'k' }).registry.wallet('default')!;
    for (const id of [undefined, 'default']) {
      const target = resolveWalletTarget(id, env);
      expect(target.id).toBe('default');
      expect(target.providerId).toBe('18446744073709551615');
      expect(target.settings).toEqual(gateway.client);
    }
  });

  it('is a wallet of WALLETS_FILE by its id, with its own credentials; an id the registry does not hold is named with the ids it does', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'wgw-check-')), 'wallets.json');
    writeFileSync(
      file,
      JSON.stringify({
        wallets: [
          { id: 'casino-a', base_url: 'https://wallet.casino-a.test', basic_user: 'gw-a', basic_password: { env: 'CASINO_A_PASSWORD' }, signing_secret: 'sign-a', provider_id: '9007199254740993' },
          { id: 'casino-b', base_url: 'http://wallet-b.test:8090', basic_user: 'gw-b', basic_password: 'pw-b', signing_secret: 'sign-b', signature_algo: 'sha512', provider_id: '7' },
        ],
        engines: [{ id: 'studio-x', keys: ['engine-key-x'], wallets: ['casino-a', 'casino-b'] }],
      }),
    );
    const registryEnv = { WALLETS_FILE: file, CASINO_A_PASSWORD: 'pw-a' };
    const b = resolveWalletTarget('casino-b', registryEnv);
    expect(b).toMatchObject({ id: 'casino-b', providerId: '7', settings: { WALLET_BASE_URL: 'http://wallet-b.test:8090', WALLET_BASIC_USER: 'gw-b', WALLET_SIGNATURE_ALGO: 'sha512' } });
    expect(resolveWalletTarget('casino-a', registryEnv).settings.WALLET_BASIC_PASSWORD).toBe('pw-a');
    expect(() => resolveWalletTarget('casino-c', registryEnv)).toThrow(/--wallet casino-c: the registry has no such wallet \(it holds: casino-a, casino-b\)/);
    expect(() => resolveWalletTarget(undefined, registryEnv)).toThrow(/--wallet default: the registry has no such wallet .*name one with --wallet/);
  });

  it('without WALLETS_FILE, any id but default is not in the registry', () => {
    expect(() => resolveWalletTarget('casino-a', env)).toThrow(ConfigError);
    expect(() => resolveWalletTarget('casino-a', env)).toThrow(/--wallet casino-a: the registry has no such wallet \(it holds: default\)/);
  });

  it('a bad variable is named, its value not shown', () => {
    expect(() => resolveWalletTarget(undefined, { ...env, WALLET_SIGNING_SECRET: undefined })).toThrow(/WALLET_SIGNING_SECRET: .*\(missing\)/);
  });

  it("the health check's default Host is the base URL's host:port without a user:password@", () => {
    expect(resolveWalletTarget(undefined, { ...env, WALLET_BASE_URL: 'https://u:pw-in-url@wallet.casino.test:8443/base' }).settings.walletHostHeader).toBe('wallet.casino.test:8443');
  });
});

describe('the ids of a check run', () => {
  it('fit the protocol for every id a run sends, and differ between runs', () => {
    const runs = Array.from({ length: 1000 }, () => newRunIds(Date.UTC(2100, 0, 1)));
    expect(new Set(runs.map((r) => r.runId)).size).toBe(1000);
    const [run] = runs as [ReturnType<typeof newRunIds>];
    expect(run.runId.startsWith(RUN_ID_PREFIX)).toBe(true);
    for (const name of ['r0', 'r1', 'r2', 'd1', 'd1b', 'd2', 'd3', 'c1', 'c1x', 'c2', 'c3', 'rb1', 'rb2', 'rb3', 'none', 'u99', 'ur99']) {
      const id = run.id(name);
      expect(debitFieldsSchema.shape.transaction_id.safeParse(id).success).toBe(true);
      expect(id.length).toBeLessThanOrEqual(MAX_ID_LENGTH);
    }
    expect(() => run.id('x'.repeat(MAX_ID_LENGTH))).toThrow(RangeError);
  });
});

describe('the HTTP status a code must come with', () => {
  it.each([
    [1, 200, undefined],
    [1, 201, 'HTTP 200'],
    [34, 422, undefined],
    [12, 200, "HTTP 500 (the spec's status for it)"],
    [104, 401, undefined],
    [104, 200, 'an error status (4xx or 5xx)'],
  ])('code %i on HTTP %i', (code, status, expected) => {
    expect(expectedStatus(code, status)).toBe(expected);
  });
});
