import type { WalletEntry } from '../config/registry';
import { ConfigError } from '../lib/config-error';
import { startSimulator, type RunningSimulator, type SimulatorOptions } from './index';

/**
 * The simulator for every wallet of a registry (WALLETS_FILE): one simulator per wallet, on the port
 * of its `base_url`, checking that wallet's own Basic credentials and signature and expecting its
 * Host header; its currency digits are the wallet's. What all share (host, TLS, start balance,
 * chaos) comes from the SIM_* variables.
 */
export interface RegistrySimulators {
  /** By wallet id. */
  readonly sims: ReadonlyMap<string, RunningSimulator>;
  close(): Promise<void>;
}

export type SharedSimOptions = Pick<SimulatorOptions, 'host' | 'tls' | 'startBalance' | 'chaos'>;

/** The port a wallet's simulator listens on: its base URL's, which must be written out. */
function portOf(entry: WalletEntry, index: number, tls: boolean): number {
  const url = new URL(entry.client.WALLET_BASE_URL);
  const problem =
    url.port === '' ? 'the simulator needs an explicit port in it' : (url.protocol === 'https:') !== tls ? 'https:// needs SIM_TLS_CERT and SIM_TLS_KEY, http:// runs without them' : undefined;
  if (problem !== undefined) throw new ConfigError(`invalid configuration:\n  WALLETS_FILE wallets[${index}].base_url: ${problem}`);
  return Number(url.port);
}

export async function startRegistrySimulators(wallets: readonly WalletEntry[], shared: SharedSimOptions): Promise<RegistrySimulators> {
  const ports = wallets.map((entry, i) => portOf(entry, i, shared.tls !== undefined));
  const sims = new Map<string, RunningSimulator>();
  const close = async (): Promise<void> => {
    await Promise.all([...sims.values()].map((sim) => sim.close()));
  };
  try {
    for (const [i, entry] of wallets.entries()) {
      const { client } = entry;
      sims.set(
        entry.id,
        await startSimulator({
          ...shared,
          port: ports[i],
          basicUser: client.WALLET_BASIC_USER,
          basicPassword: client.WALLET_BASIC_PASSWORD,
          signingSecret: client.WALLET_SIGNING_SECRET,
          signatureAlgo: client.WALLET_SIGNATURE_ALGO,
          signatureEncoding: client.WALLET_SIGNATURE_ENCODING,
          currencyDigits: { ...entry.currencyDigits },
          expectedHost: client.walletHostHeader,
        }),
      );
    }
  } catch (err) {
    await close();
    throw err;
  }
  return { sims, close };
}
