import { ConfigError, loadWalletRegistry, type WalletSettings } from '../config/env';
import { DEFAULT_WALLET_ID } from '../config/registry';

/**
 * Which wallet a check talks to, and with what: a wallet of the registry (contract 11), read as the
 * gateway reads it — WALLETS_FILE's, or wallet `default` of the single-wallet variables (contract 2).
 */
export interface WalletTarget {
  readonly id: string;
  readonly settings: WalletSettings;
  readonly providerId: string;
}

type Env = Readonly<Record<string, string | undefined>>;

/** Throws ConfigError naming the variable or field, or the wallet id the registry does not hold. */
export function resolveWalletTarget(walletId: string | undefined, env: Env): WalletTarget {
  const registry = loadWalletRegistry(env);
  const id = walletId ?? DEFAULT_WALLET_ID;
  const entry = registry.wallet(id);
  if (entry === undefined) {
    const known = registry.wallets.map((w) => w.id).join(', ');
    throw new ConfigError(`--wallet ${id}: the registry has no such wallet (it holds: ${known})${walletId === undefined ? '; name one with --wallet' : ''}`);
  }
  return { id, settings: entry.client, providerId: entry.providerId };
}
