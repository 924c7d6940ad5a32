import { ConfigError, loadWalletCheckConfig, type WalletSettings } from '../config/env';

/**
 * Which wallet a check talks to, and with what. The one seam for the registry of wallets
 * (contract 11, WALLETS_FILE), which this build does not read yet: today only the wallet `default`
 * exists, defined by the single-wallet variables (contract 2) and parsed exactly as the gateway
 * parses them. Once the registry lands, `resolveWalletTarget` looks the id up there instead.
 */
export interface WalletTarget {
  readonly id: string;
  readonly settings: WalletSettings;
  readonly providerId: string;
}

export const DEFAULT_WALLET_ID = 'default';

type Env = Readonly<Record<string, string | undefined>>;

/** Throws ConfigError naming the variable, or saying the registry is not configured for another id. */
export function resolveWalletTarget(walletId: string | undefined, env: Env): WalletTarget {
  const id = walletId ?? DEFAULT_WALLET_ID;
  if (id !== DEFAULT_WALLET_ID) {
    throw new ConfigError(
      `--wallet ${id}: no wallet registry is configured (WALLETS_FILE, contract section 11, is not supported by this build); ` +
        `only the wallet "${DEFAULT_WALLET_ID}" of the WALLET_* variables can be checked (omit --wallet or pass --wallet ${DEFAULT_WALLET_ID})`,
    );
  }
  const config = loadWalletCheckConfig(env);
  const { PROVIDER_ID, ...settings } = config;
  return { id, settings, providerId: PROVIDER_ID };
}
