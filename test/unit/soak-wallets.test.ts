import { loadRegistryFile } from '../../src/config/registry';
import type { Reconciliation } from '../../src/soak/checker';
import { parseSizes, soakDefaults, type Sizes } from '../../src/soak/cli';
import { ENGINE_ID, ENGINE_KEYS, combine, registryFile, soakWallets, walletLine } from '../../src/soak/wallets';

const DEFAULTS: Sizes = soakDefaults(1);

describe('the wallets of a soak over several wallets', () => {
  it('each has its own id, credentials, signing secret and provider id, the signature schemes in turn', () => {
    const wallets = soakWallets(4);
    expect(wallets.map((w) => w.id)).toEqual(['casino-a', 'casino-b', 'casino-c', 'casino-d']);
    expect(wallets.map((w) => `${w.signatureAlgo} ${w.signatureEncoding}`)).toEqual(['sha256 hex', 'sha512 base64', 'sha512 hex', 'sha256 base64']);
    for (const field of ['basicUser', 'basicPassword', 'signingSecret', 'providerId'] as const) expect(new Set(wallets.map((w) => w[field])).size).toBe(4);
    expect(wallets.map((w) => w.engineKey)).toEqual([0, 1, 0, 1]);
  });

  it('the generated WALLETS_FILE passes the gateway\'s own validation, its secrets in every form the registry takes', () => {
    const wallets = soakWallets(3);
    const files = new Map<string, string>();
    const { file, env } = registryFile(wallets, ['http://127.0.0.1:4001', 'http://127.0.0.1:4002', 'http://127.0.0.1:4003'], 1500, (name, value) => {
      const path = `/secrets/${name}`;
      files.set(path, `${value}\n`);
      return path;
    });
    files.set('/wallets.json', JSON.stringify(file));
    const registry = loadRegistryFile('/wallets.json', env, { WALLET_CONNECTIONS: 8, WALLET_HTTP2: false, WALLET_TLS_INSECURE: false, currencyDigits: {}, maxTimeoutMs: 60_000 }, (path) => {
      const text = files.get(path);
      if (text === undefined) throw Object.assign(new Error('no such file'), { code: 'ENOENT' });
      return text;
    });
    expect(
      registry.wallets.map((w) => ({
        id: w.id,
        url: w.client.WALLET_BASE_URL,
        user: w.client.WALLET_BASIC_USER,
        password: w.client.WALLET_BASIC_PASSWORD,
        secret: w.client.WALLET_SIGNING_SECRET,
        signature: `${w.client.WALLET_SIGNATURE_ALGO} ${w.client.WALLET_SIGNATURE_ENCODING}`,
        provider: w.providerId,
        timeout: w.client.WALLET_TIMEOUT_MS,
      })),
    ).toEqual(
      wallets.map((w, i) => ({
        id: w.id,
        url: `http://127.0.0.1:${4001 + i}`,
        user: w.basicUser,
        password: w.basicPassword,
        secret: w.signingSecret,
        signature: `${w.signatureAlgo} ${w.signatureEncoding}`,
        provider: w.providerId,
        timeout: 1500,
      })),
    );
    expect(registry.engines).toEqual([{ id: ENGINE_ID, keys: [...ENGINE_KEYS], wallets: ['casino-a', 'casino-b', 'casino-c'] }]);
    // A value, a variable and a file: each form is used.
    const forms = file as { wallets: { basic_password: unknown; signing_secret: unknown }[] };
    const kinds = forms.wallets.flatMap((w) => [w.basic_password, w.signing_secret]).map((s) => (typeof s === 'string' ? 'value' : Object.keys(s as object)[0]));
    expect(new Set(kinds)).toEqual(new Set(['value', 'env', 'file']));
  });
});

function reconciliation(lost: number, doubled: number, drift: number, findings: Reconciliation['findings'] = []): Reconciliation {
  return {
    lost,
    doubled,
    drift,
    findings,
    players: [
      { playerId: '1', currency: 'EUR', start: '1000.00', implied: '990.00', ledger: '990.00', betsAccepted: 2, betsRefused: 1, betsCompensated: 1, winsAccepted: 3, winsCredited: 3, refundsAccepted: 1, refundsApplied: 1 },
    ],
    records: { total: 7, byState: { succeeded: 6, compensated: 1 }, compensations: 1, dead: [] },
    tokens: { total: 1, terminated: 1 },
  };
}

describe('reconciling each wallet apart', () => {
  it('the closing line is the sum of the wallets\' and each finding names its wallet', () => {
    const lostWin = { kind: 'lost-win' as const, playerId: '1', transactionId: 'p0-r0-w', detail: 'win acknowledged was never applied' };
    const total = combine([
      { wallet: 'casino-a', reconciliation: reconciliation(0, 0, 0) },
      { wallet: 'casino-b', reconciliation: reconciliation(1, 0, 1, [lostWin]) },
    ]);
    expect({ lost: total.lost, doubled: total.doubled, drift: total.drift }).toEqual({ lost: 1, doubled: 0, drift: 1 });
    expect(total.findings).toEqual([{ ...lostWin, detail: 'wallet casino-b: win acknowledged was never applied' }]);
    expect(total.records).toEqual({ total: 14, byState: { succeeded: 12, compensated: 2 }, compensations: 2, dead: [] });
    expect(total.tokens).toEqual({ total: 2, terminated: 2 });
    expect(total.players.map((p) => p.playerId)).toEqual(['casino-a 1', 'casino-b 1']);
  });

  it('a wallet\'s line carries its own lost, doubled and drift, and says which wallet was down', () => {
    const [a, b] = soakWallets(2);
    expect(walletLine(a!, reconciliation(0, 0, 0), undefined)).toBe(
      'wallet casino-a (HMAC-SHA256 hex, provider 18446744073709551615): lost: 0, doubled: 0, drift: 0; players 1, bets accepted 2, refused 1 (applied then compensated 1), ' +
        'wins accepted 3 / credited 3, refunds accepted 1 / applied 1, records 7 (dead 0), tokens terminated 1 of 1, differences 0',
    );
    expect(walletLine(b!, reconciliation(0, 2, 0), 30)).toMatch(/^wallet casino-b \(HMAC-SHA512 base64, provider 9007199254740993, down 30 s\): lost: 0, doubled: 2, drift: 0; /);
  });
});

describe('--wallets', () => {
  it('is 1 by default: the single-wallet run, no outage', () => {
    expect(parseSizes([], DEFAULTS)).toEqual(DEFAULTS);
  });

  it('with several wallets takes one down for 30 s unless --outage says otherwise', () => {
    expect(parseSizes(['--wallets', '3'], DEFAULTS)).toEqual({ ...DEFAULTS, wallets: 3, outageSeconds: 30 });
    expect(parseSizes(['--wallets', '3', '--outage', '0'], DEFAULTS)).toEqual({ ...DEFAULTS, wallets: 3, outageSeconds: 0 });
    expect(parseSizes(['--wallets', '2', '--outage', '12'], DEFAULTS)).toEqual({ ...DEFAULTS, wallets: 2, outageSeconds: 12 });
  });

  it('refuses no wallet at all, naming the flag', () => {
    expect(() => parseSizes(['--wallets', '0'], DEFAULTS)).toThrow('--wallets: expected a whole number >= 1, got "0"');
  });
});
