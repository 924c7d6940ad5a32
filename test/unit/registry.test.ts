import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadGatewayConfig, loadWorkerConfig } from '../../src/config/env';
import { messageOf } from '../support/config-message';

/** The registry of wallets and engines (contract 11): WALLETS_FILE validated whole at start. */
const dir = mkdtempSync(join(tmpdir(), 'wgw-registry-'));
let files = 0;

function fileWith(content: unknown): string {
  files += 1;
  const path = join(dir, `wallets-${files}.json`);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

const SIGNING_FILE = join(dir, 'signing-a');
writeFileSync(SIGNING_FILE, 'file-signing-value-7\n');

const SECRETS = ['pw-value-a-1', 'file-signing-value-7', 'env-key-value-3', 'env-key-value-4', 'inline-secret-b-5', 'sign-b-6'];

const env = { CASINO_A_PASSWORD: 'pw-value-a-1', STUDIO_X_KEY: 'env-key-value-3', STUDIO_X_KEY_NEXT: 'env-key-value-4' };

const walletA = {
  id: 'casino-a',
  base_url: 'https://wallet.casino-a.example/',
  basic_user: 'gw-a',
  basic_password: { env: 'CASINO_A_PASSWORD' },
  signing_secret: { file: SIGNING_FILE },
  provider_id: '9007199254740993',
};
const walletB = {
  id: 'casino-b',
  base_url: 'http://wallet-b.example:8090',
  basic_user: 'gw-b',
  basic_password: 'inline-secret-b-5',
  signing_secret: 'sign-b-6',
  signature_algo: 'sha512',
  signature_encoding: 'base64',
  provider_id: 7,
  timeout_ms: 800,
  retry_delay_unit: 's',
  host_header: 'wallet-b.internal',
  currency_digits: { KWD: 3 },
  max_in_flight: 20,
};
const valid = {
  wallets: [walletA, walletB],
  engines: [{ id: 'studio-x', keys: [{ env: 'STUDIO_X_KEY' }, { env: 'STUDIO_X_KEY_NEXT' }], wallets: ['casino-a', 'casino-b'] }],
};

describe('WALLETS_FILE', () => {
  it('reads every wallet and engine, resolves the secrets, and gives the optional fields the single-wallet defaults; no WALLET_* variable is needed', () => {
    const { registry } = loadGatewayConfig({ ...env, WALLETS_FILE: fileWith(valid), CURRENCY_DIGITS: 'JPY:0' });
    expect(registry.wallet('casino-a')).toEqual({
      id: 'casino-a',
      client: {
        WALLET_BASE_URL: 'https://wallet.casino-a.example',
        WALLET_BASIC_USER: 'gw-a',
        WALLET_BASIC_PASSWORD: 'pw-value-a-1',
        WALLET_SIGNING_SECRET: 'file-signing-value-7',
        WALLET_SIGNATURE_ALGO: 'sha256',
        WALLET_SIGNATURE_ENCODING: 'hex',
        WALLET_TIMEOUT_MS: 5000,
        WALLET_CONNECTIONS: 64,
        WALLET_HTTP2: true,
        WALLET_TLS_INSECURE: false,
        walletHostHeader: 'wallet.casino-a.example',
      },
      // Past 2^53 and still exact.
      providerId: '9007199254740993',
      retryDelayUnit: 'ms',
      currencyDigits: { JPY: 0 },
      maxInFlight: 256,
    });
    expect(registry.wallet('casino-b')).toMatchObject({
      client: { WALLET_SIGNATURE_ALGO: 'sha512', WALLET_SIGNATURE_ENCODING: 'base64', WALLET_TIMEOUT_MS: 800, walletHostHeader: 'wallet-b.internal' },
      providerId: '7',
      retryDelayUnit: 's',
      currencyDigits: { KWD: 3 },
      maxInFlight: 20,
    });
    expect(registry.engines).toEqual([{ id: 'studio-x', keys: ['env-key-value-3', 'env-key-value-4'], wallets: ['casino-a', 'casino-b'] }]);
    expect(registry.wallet('default')).toBeUndefined();
  });

  it('a provider_id written as a JSON number past 2^53 keeps every digit', () => {
    const { registry } = loadWorkerConfig({ ...env, WALLETS_FILE: fileWith(JSON.stringify({ ...valid, wallets: [walletA, { ...walletB, provider_id: 0 }] }).replace('"provider_id":0', '"provider_id":18446744073709551615')) });
    expect(registry.wallet('casino-b')!.providerId).toBe('18446744073709551615');
  });

  const broken: [string, unknown, string][] = [
    ['a wallet id outside [a-z0-9-]', { ...valid, wallets: [{ ...walletA, id: 'Casino_A' }, walletB] }, 'WALLETS_FILE wallets[0].id: must be 1–32 characters'],
    ['a wallet id over 32 characters', { ...valid, wallets: [walletA, { ...walletB, id: 'b'.repeat(33) }] }, 'WALLETS_FILE wallets[1].id: must be 1–32'],
    ['two wallets with one id', { ...valid, wallets: [walletA, { ...walletB, id: 'casino-a' }] }, 'WALLETS_FILE wallets[1].id: repeats the id of wallets[0]'],
    ['an unset secret variable', { ...valid, wallets: [{ ...walletA, basic_password: { env: 'NOT_SET_ANYWHERE' } }, walletB] }, 'WALLETS_FILE wallets[0].basic_password: the variable NOT_SET_ANYWHERE is not set'],
    ['an unreadable secret file', { ...valid, wallets: [walletA, { ...walletB, signing_secret: { file: join(dir, 'missing') } }] }, 'WALLETS_FILE wallets[1].signing_secret: the file cannot be read (ENOENT)'],
    ['a secret with whitespace', { ...valid, wallets: [walletA, { ...walletB, basic_password: 'inline secret-b-5' }] }, 'WALLETS_FILE wallets[1].basic_password: the value must be non-empty, without whitespace'],
    ['a secret of another shape', { ...valid, wallets: [walletA, { ...walletB, signing_secret: { value: 'sign-b-6' } }] }, 'WALLETS_FILE wallets[1].signing_secret: must be a string, { "env": NAME } or { "file": PATH }'],
    ['an unknown signing algorithm', { ...valid, wallets: [walletA, { ...walletB, signature_algo: 'md5' }] }, 'WALLETS_FILE wallets[1].signature_algo: '],
    ['a base URL that is not http(s)', { ...valid, wallets: [walletA, { ...walletB, base_url: 'ftp://inline-secret-b-5@x' }] }, 'WALLETS_FILE wallets[1].base_url: must be an http:// or https:// URL'],
    ['an unknown field', { ...valid, wallets: [walletA, { ...walletB, pasword: 'inline-secret-b-5' }] }, 'WALLETS_FILE wallets[1]: '],
    ['an engine on an unknown wallet', { ...valid, engines: [{ ...valid.engines[0]!, wallets: ['casino-a', 'casino-z'] }] }, 'WALLETS_FILE engines[0].wallets[1]: names no wallet of the file'],
    ['three keys', { ...valid, engines: [{ ...valid.engines[0]!, keys: ['env-key-value-3', 'env-key-value-4', 'sign-b-6'] }] }, 'WALLETS_FILE engines[0].keys: at most two keys'],
    ['one key for two engines', { ...valid, engines: [valid.engines[0]!, { id: 'studio-y', keys: [{ env: 'STUDIO_X_KEY_NEXT' }], wallets: ['casino-b'] }] }, 'WALLETS_FILE engines[1].keys[0]: is the same key as engines[0].keys[1]'],
    ['no wallet', { wallets: [], engines: [] }, 'WALLETS_FILE wallets: needs at least one wallet'],
  ];

  it.each(broken)('%s is refused at start naming the field, no secret echoed', (_label, file, expected) => {
    for (const load of [loadGatewayConfig, loadWorkerConfig]) {
      const message = messageOf(() => load({ ...env, WALLETS_FILE: fileWith(file) }));
      expect(message).toContain(expected);
      for (const secret of SECRETS) expect(message).not.toContain(secret);
    }
  });

  it('a file that is not JSON is refused without quoting it; a missing file by its error code', () => {
    const message = messageOf(() => loadGatewayConfig({ WALLETS_FILE: fileWith('{"wallets": [{"basic_password": "inline-secret-b-5" oops') }));
    expect(message).toBe('invalid configuration:\n  WALLETS_FILE: is not valid JSON');
    expect(messageOf(() => loadGatewayConfig({ WALLETS_FILE: join(dir, 'nowhere.json') }))).toContain('WALLETS_FILE: cannot be read (ENOENT)');
  });

  it('every problem of the file is named in one message', () => {
    const message = messageOf(() => loadGatewayConfig({ WALLETS_FILE: fileWith({ ...valid, wallets: [{ ...walletA, id: 'A' }, { ...walletB, timeout_ms: 0 }] }) }));
    expect(message).toContain('wallets[0].id');
    expect(message).toContain('wallets[0].basic_password');
    expect(message).toContain('wallets[1].timeout_ms');
  });
});
