import { randomUUID } from 'node:crypto';
import { CHECKS } from '../../src/check/checks';
import { runWalletCheck, type CheckReport } from '../../src/check/run';
import { newRunIds } from '../../src/check/run-ids';
import type { WalletSettings } from '../../src/config/env';
import { Child, tsEntry } from '../../src/lib/child';
import { selfSignedCert } from '../../src/lib/self-signed-cert';
import { startSimulator, type Ledger, type RunningSimulator } from '../../src/sim';
import { createWalletClient } from '../../src/wallet/client';
import { MAX_ID_LENGTH } from '../../src/wallet/protocol';
import { basicAuthHeader } from '../../src/wallet/signer';
import { startDoubleDebitWallet, startIdRoundingWallet, startSignatureBlindWallet } from '../support/test-wallets';
import { TRANSPORTS } from '../support/transports';

/**
 * `npm run wallet-check` (contract 15) against real wallets over real HTTP: the bundled simulator,
 * and test wallets built from it with one protocol rule broken each.
 */
const credentials = { basicUser: 'check-user', basicPassword: 'check-basic-password-8d1f', signingSecret: 'check-signing-secret-51c2' };
const PROVIDER_ID = '9007199254740993';
const SITE_ID = '18446744073709551614';

let playerSeq = 0;
function newPlayer(): { token: string; playerId: string; siteId: string; currency: string; gameId: string } {
  playerSeq += 1;
  return { token: `tok-${randomUUID()}`, playerId: String(18_446_744_073_709_000_000n + BigInt(playerSeq)), siteId: SITE_ID, currency: 'EUR', gameId: 'slot-1' };
}

function settingsFor(url: string, overrides: Partial<WalletSettings> = {}): WalletSettings {
  return {
    WALLET_BASE_URL: url,
    WALLET_BASIC_USER: credentials.basicUser,
    WALLET_BASIC_PASSWORD: credentials.basicPassword,
    WALLET_SIGNING_SECRET: credentials.signingSecret,
    WALLET_SIGNATURE_ALGO: 'sha256',
    WALLET_SIGNATURE_ENCODING: 'hex',
    WALLET_TIMEOUT_MS: 5000,
    WALLET_CONNECTIONS: 4,
    WALLET_HTTP2: true,
    WALLET_TLS_INSECURE: true,
    walletHostHeader: new URL(url).host,
    ...overrides,
  };
}

async function check(url: string, player = newPlayer(), amount = '0.10'): Promise<CheckReport> {
  return runWalletCheck({
    walletId: 'default',
    settings: settingsFor(url),
    providerId: PROVIDER_ID,
    player,
    amount,
    ids: newRunIds(),
    openClient: createWalletClient,
  });
}

const failing = (report: CheckReport): string[] => report.checks.filter((c) => c.result !== 'PASS').map((c) => c.name);

/** Every transaction the wallet holds of this run: ids within the protocol's length, all of the run. */
function expectRunIds(ledger: Ledger, report: CheckReport): void {
  const ours = ledger.transactions().filter((t) => t.transactionId.startsWith(report.run_id));
  expect(ours.length).toBeGreaterThan(0);
  for (const t of ours) {
    expect(t.transactionId.length).toBeLessThanOrEqual(MAX_ID_LENGTH);
    expect(t.roundId.length).toBeLessThanOrEqual(MAX_ID_LENGTH);
  }
}

describe.each(TRANSPORTS)('wallet-check against the bundled simulator over $label', ({ tls }) => {
  let sim: RunningSimulator;
  beforeAll(async () => {
    sim = await startSimulator({ ...credentials, tls: tls ? selfSignedCert() : undefined });
  });
  afterAll(() => sim.close());

  it('passes every check, in the contract order, and gives back every amount it moved', async () => {
    const player = newPlayer();
    const report = await check(sim.url, player);
    expect(report.checks.map((c) => [c.name, c.result])).toEqual(CHECKS.map((c) => [c.name, 'PASS']));
    expect(report.passed).toBe(true);
    expect(report.net).toBe('0.00');
    expect(sim.ledger.balanceOf(player.playerId, 'EUR')).toBe('1000.00');
    for (const line of report.checks.filter((c) => c.name !== 'health-check' && c.name !== 'http-status')) {
      expect(line.request_id).toMatch(/^[0-9a-f-]{36}$/);
      expect(line.code).not.toBeNull();
    }
    expectRunIds(sim.ledger, report);
  });
});

describe('wallet-check against wallets with one defect', () => {
  it('a wallet that takes any signature fails the wrong-signature check, and only it', async () => {
    const wallet = await startSignatureBlindWallet(credentials);
    try {
      const player = newPlayer();
      const report = await check(wallet.url, player);
      expect(failing(report)).toEqual(['wrong-signature']);
      const line = report.checks.find((c) => c.name === 'wrong-signature');
      expect(line).toMatchObject({ result: 'FAIL', code: 1, expected: expect.stringContaining('refusal') });
      expect(report.passed).toBe(false);
      expect(report.net).toBe('0.00');
      expect(wallet.ledger.balanceOf(player.playerId, 'EUR')).toBe('1000.00');
    } finally {
      await wallet.close();
    }
  });

  it('a wallet that applies a repeated debit again fails the debit-repeat check, and only it, and the second stake is given back', async () => {
    const wallet = await startDoubleDebitWallet(credentials);
    try {
      const player = newPlayer();
      const report = await check(wallet.url, player);
      expect(failing(report)).toEqual(['debit-repeat']);
      const line = report.checks.find((c) => c.name === 'debit-repeat');
      expect(line?.detail).toContain('moved the balance by -0.10');
      expect(report.passed).toBe(false);
      expect(report.net).toBe('0.00');
      expect(wallet.ledger.balanceOf(player.playerId, 'EUR')).toBe('1000.00');
    } finally {
      await wallet.close();
    }
  });

  it('a wallet that rounds player ids fails authenticate, and moves nothing', async () => {
    const sim = await startSimulator(credentials);
    const wallet = await startIdRoundingWallet(sim);
    try {
      const player = { ...newPlayer(), playerId: '18446744073709551615' };
      const report = await check(wallet.url, player);
      expect(report.checks.find((c) => c.name === 'authenticate')).toMatchObject({ result: 'FAIL', detail: expect.stringContaining('player_id') });
      expect(report.passed).toBe(false);
      // Its success is no answer to the request (a success about another player): no money call follows.
      expect(report.checks.find((c) => c.name === 'debit')?.detail).toBe('not run: authenticate failed');
      expect(sim.ledger.transactions()).toEqual([]);
    } finally {
      await wallet.close();
      await sim.close();
    }
  });

  it('a wallet that does not answer fails every required check, without an exception', async () => {
    const sim = await startSimulator(credentials);
    const url = sim.url;
    await sim.close();
    const report = await check(url);
    expect(report.passed).toBe(false);
    expect(report.checks.filter((c) => c.required).every((c) => c.result === 'FAIL')).toBe(true);
    expect(report.net).toBeNull();
  });
});

describe('npm run wallet-check, the command', () => {
  let sim: RunningSimulator;
  let blind: RunningSimulator;
  beforeAll(async () => {
    [sim, blind] = await Promise.all([startSimulator(credentials), startSignatureBlindWallet(credentials)]);
  });
  afterAll(() => Promise.all([sim.close(), blind.close()]));

  /** The entry as `npm run wallet-check --` runs it, with the single-wallet variables of `url`. */
  async function command(url: string, args: readonly string[]): Promise<{ code: number | null; stdout: string; output: string }> {
    const { origin, host } = new URL(url);
    const env = {
      ...process.env,
      // user:password in the base URL too: neither may show up anywhere.
      WALLET_BASE_URL: `http://url-user:url-password-77aa@${host}`,
      WALLET_BASIC_USER: credentials.basicUser,
      WALLET_BASIC_PASSWORD: credentials.basicPassword,
      WALLET_SIGNING_SECRET: credentials.signingSecret,
      PROVIDER_ID,
    };
    expect(origin).toMatch(/^http:/);
    const child = new Child({ name: 'wallet-check', args: [...tsEntry('src/main/wallet-check.ts'), ...args], env });
    await child.start();
    const code = await child.exited;
    return { code, stdout: child.stdout(), output: child.output() };
  }

  const playerArgs = (p: ReturnType<typeof newPlayer>): string[] => ['--token', p.token, '--player-id', p.playerId, '--site-id', p.siteId, '--currency', p.currency, '--game-id', p.gameId];

  function expectNoSecret(output: string, token: string): void {
    const basic = basicAuthHeader(credentials.basicUser, credentials.basicPassword).slice('Basic '.length);
    for (const secret of [token, credentials.basicPassword, credentials.signingSecret, basic, 'url-password-77aa']) {
      expect(output).not.toContain(secret);
    }
  }

  it('prints one line per check and exits 0 against the simulator; --wallet default is the same wallet', async () => {
    const player = newPlayer();
    const run = await command(sim.url, [...playerArgs(player), '--wallet', 'default']);
    expect(run.code).toBe(0);
    const lines = run.stdout.split('\n');
    for (const c of CHECKS) expect(lines.filter((l) => new RegExp(`^PASS  ${c.name}[ (]`).test(l))).toHaveLength(1);
    expect(run.stdout).toMatch(/^net: 0.00 \(balance 1000\.00 at authenticate, 1000\.00 at terminate\)$/m);
    expectNoSecret(run.output, player.token);
  });

  it('--json prints the same as one document, and a failed required check exits 1, with no secret printed either way', async () => {
    const player = newPlayer();
    const run = await command(blind.url, [...playerArgs(player), '--json', '--amount', '2.5']);
    expect(run.code).toBe(1);
    const doc = JSON.parse(run.stdout) as CheckReport;
    expect(doc.checks.map((c) => c.name)).toEqual(CHECKS.map((c) => c.name));
    expect(doc.failed_required).toEqual(['wrong-signature']);
    expect(doc.passed).toBe(false);
    expect(doc.net).toBe('0.00');
    expectNoSecret(run.output, player.token);
  });

  it('refuses bad flags and a wallet id the configuration does not hold with exit 2, naming the flag, sending nothing', async () => {
    sim.clearCalls();
    const player = newPlayer();
    const bad = await command(sim.url, ['--token', player.token, '--player-id', '12x', '--site-id', '7', '--currency', 'EUR']);
    expect(bad.code).toBe(2);
    expect(bad.output).toContain('--player-id: must be an unsigned integer');
    expect(bad.output).toContain('--game-id: required');
    const other = await command(sim.url, [...playerArgs(player), '--wallet', 'casino-a']);
    expect(other.code).toBe(2);
    expect(other.output).toContain('--wallet casino-a: the registry has no such wallet (it holds: default)');
    expect(sim.calls()).toHaveLength(0);
    expectNoSecret(bad.output + other.output, player.token);
  });
});
