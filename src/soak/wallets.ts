import type { SignatureAlgo, SignatureEncoding } from '../config/registry';
import type { Reconciliation } from './checker';

/**
 * The wallets of a run over several wallets (`--wallets N`, contract 11): each its own simulator with
 * its own Basic credentials, signing secret, signature algorithm and encoding and provider id, all
 * in one generated WALLETS_FILE that gives the run's engine every wallet (with two keys: a rotation,
 * the wallets' engines using one or the other). Each wallet is reconciled against its own books and
 * the run's closing line is the sum.
 */
export interface SoakWallet {
  readonly id: string;
  readonly basicUser: string;
  readonly basicPassword: string;
  readonly signingSecret: string;
  readonly signatureAlgo: SignatureAlgo;
  readonly signatureEncoding: SignatureEncoding;
  readonly providerId: string;
  /** Which of the engine's two keys this wallet's engine sends. */
  readonly engineKey: 0 | 1;
}

/** The signature schemes the wallets take in turn. */
const SIGNATURES: readonly { algo: SignatureAlgo; encoding: SignatureEncoding }[] = [
  { algo: 'sha256', encoding: 'hex' },
  { algo: 'sha512', encoding: 'base64' },
  { algo: 'sha512', encoding: 'hex' },
  { algo: 'sha256', encoding: 'base64' },
];

/** Provider ids at the edges a lossy parse would break: 2^64−1, 2^53+1, 2^32+1; then small ones. */
const PROVIDER_IDS = ['18446744073709551615', '9007199254740993', '4294967297'];

export const ENGINE_ID = 'soak-engine';
export const ENGINE_KEYS = ['soak-engine-key', 'soak-engine-key-next'] as const;

/** `casino-a`, `casino-b`, … (`casino-27` and on past the alphabet). */
export function walletId(index: number): string {
  return index < 26 ? `casino-${String.fromCharCode(97 + index)}` : `casino-${index + 1}`;
}

export function soakWallets(count: number): SoakWallet[] {
  return Array.from({ length: count }, (_, i) => {
    const id = walletId(i);
    const signature = SIGNATURES[i % SIGNATURES.length]!;
    return {
      id,
      basicUser: `gw-${id}`,
      basicPassword: `${id}-password`,
      signingSecret: `${id}-signing-secret`,
      signatureAlgo: signature.algo,
      signatureEncoding: signature.encoding,
      providerId: PROVIDER_IDS[i] ?? String(i + 1),
      engineKey: i % 2 === 0 ? 0 : 1,
    };
  });
}

/**
 * The WALLETS_FILE of the run, and the variables its `{ "env": … }` secrets name. The secrets take
 * each form the registry accepts in turn (the value, a variable, a file), so the run starts from
 * all three; `secretFile` writes a file secret and gives its path.
 */
export function registryFile(
  wallets: readonly SoakWallet[],
  urls: readonly string[],
  timeoutMs: number,
  secretFile: (name: string, value: string) => string,
): { file: object; env: Record<string, string> } {
  const env: Record<string, string> = {};
  const secret = (i: number, name: string, value: string): unknown => {
    if (i % 3 === 0) return value;
    if (i % 3 === 1) {
      const variable = `SOAK_${name.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
      env[variable] = value;
      return { env: variable };
    }
    return { file: secretFile(name, value) };
  };
  const file = {
    wallets: wallets.map((w, i) => ({
      id: w.id,
      base_url: urls[i],
      basic_user: w.basicUser,
      basic_password: secret(i, `${w.id}-password`, w.basicPassword),
      signing_secret: secret(i + 1, `${w.id}-signing`, w.signingSecret),
      signature_algo: w.signatureAlgo,
      signature_encoding: w.signatureEncoding,
      provider_id: w.providerId,
      timeout_ms: timeoutMs,
      retry_delay_unit: 'ms',
    })),
    engines: [{ id: ENGINE_ID, keys: [ENGINE_KEYS[0], secret(1, 'engine-key-next', ENGINE_KEYS[1])], wallets: wallets.map((w) => w.id) }],
  };
  return { file, env };
}

/** The run's reconciliation from each wallet's: counts summed, each finding and player naming its wallet. */
export function combine(perWallet: readonly { readonly wallet: string; readonly reconciliation: Reconciliation }[]): Reconciliation {
  const byState: Record<string, number> = {};
  for (const { reconciliation } of perWallet) {
    for (const [state, n] of Object.entries(reconciliation.records.byState)) byState[state] = (byState[state] ?? 0) + n;
  }
  const sum = (of: (r: Reconciliation) => number): number => perWallet.reduce((n, w) => n + of(w.reconciliation), 0);
  return {
    lost: sum((r) => r.lost),
    doubled: sum((r) => r.doubled),
    drift: sum((r) => r.drift),
    findings: perWallet.flatMap(({ wallet, reconciliation }) => reconciliation.findings.map((f) => ({ ...f, detail: `wallet ${wallet}: ${f.detail}` }))),
    // The same player id is in several wallets: the demo's per-player table names the wallet.
    players: perWallet.flatMap(({ wallet, reconciliation }) => reconciliation.players.map((p) => ({ ...p, playerId: `${wallet} ${p.playerId}` }))),
    records: {
      total: sum((r) => r.records.total),
      byState,
      compensations: sum((r) => r.records.compensations),
      dead: perWallet.flatMap(({ wallet, reconciliation }) => reconciliation.records.dead.map((d) => ({ ...d, reason: `wallet ${wallet}: ${d.reason}` }))),
    },
    tokens: { total: sum((r) => r.tokens.total), terminated: sum((r) => r.tokens.terminated) },
  };
}

/**
 * One wallet's reconciliation line, printed before the run's closing line:
 * `wallet casino-b (HMAC-SHA512 base64, down 30 s): lost: 0, doubled: 0, drift: 0; …`.
 */
export function walletLine(wallet: SoakWallet, r: Reconciliation, downSeconds: number | undefined): string {
  const t = r.players.reduce(
    (a, p) => ({
      winsAccepted: a.winsAccepted + p.winsAccepted,
      winsCredited: a.winsCredited + p.winsCredited,
      refundsAccepted: a.refundsAccepted + p.refundsAccepted,
      refundsApplied: a.refundsApplied + p.refundsApplied,
      betsAccepted: a.betsAccepted + p.betsAccepted,
      betsRefused: a.betsRefused + p.betsRefused,
      betsCompensated: a.betsCompensated + p.betsCompensated,
    }),
    { winsAccepted: 0, winsCredited: 0, refundsAccepted: 0, refundsApplied: 0, betsAccepted: 0, betsRefused: 0, betsCompensated: 0 },
  );
  const about = `HMAC-${wallet.signatureAlgo.toUpperCase()} ${wallet.signatureEncoding}, provider ${wallet.providerId}${downSeconds === undefined ? '' : `, down ${downSeconds} s`}`;
  return (
    `wallet ${wallet.id} (${about}): lost: ${r.lost}, doubled: ${r.doubled}, drift: ${r.drift}; players ${r.players.length}, ` +
    `bets accepted ${t.betsAccepted}, refused ${t.betsRefused} (applied then compensated ${t.betsCompensated}), wins accepted ${t.winsAccepted} / credited ${t.winsCredited}, ` +
    `refunds accepted ${t.refundsAccepted} / applied ${t.refundsApplied}, records ${r.records.total} (dead ${r.records.dead.length}), tokens terminated ${r.tokens.terminated} of ${r.tokens.total}, differences ${r.findings.length}`
  );
}
