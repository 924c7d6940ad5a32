import { readFileSync } from 'node:fs';
import { ConfigError, SIM_DEFAULTS, loadSimConfig, loadSimWallets, simDefaultedVariables, type SimConfig } from '../config/env';
import { runUntilSignal, type Running } from '../lib/lifecycle';
import { startSimulator, type RunningSimulator } from './index';
import { startRegistrySimulators } from './registry';

/**
 * `npm run sim`: the wallet simulator alone. Prints which WALLET_* defaults are in use (they are
 * public development values) but never a value taken from the environment. With WALLETS_FILE, one
 * simulator per wallet of the registry, each with that wallet's credentials and signature.
 */
function tlsFrom(config: SimConfig): { cert: Buffer; key: Buffer } | undefined {
  if (config.SIM_TLS_CERT === undefined && config.SIM_TLS_KEY === undefined) return undefined;
  if (config.SIM_TLS_CERT === undefined || config.SIM_TLS_KEY === undefined) {
    throw new ConfigError('invalid configuration:\n  SIM_TLS_CERT, SIM_TLS_KEY: set both or neither');
  }
  return { cert: readFileSync(config.SIM_TLS_CERT), key: readFileSync(config.SIM_TLS_KEY) };
}

async function start(): Promise<Running> {
  const config = loadSimConfig();
  const wallets = loadSimWallets();
  if (wallets !== undefined) return startForRegistry(config, wallets);
  for (const name of simDefaultedVariables()) {
    console.log(`${name} is unset: using the default ${JSON.stringify(SIM_DEFAULTS[name])}`);
  }
  const tls = tlsFrom(config);
  const chaos = config.SIM_CHAOS_SEED === undefined ? undefined : { seed: config.SIM_CHAOS_SEED, rate: config.SIM_CHAOS_RATE };
  const sim: RunningSimulator = await startSimulator({
    port: config.SIM_PORT,
    host: config.SIM_HOST,
    basicUser: config.WALLET_BASIC_USER,
    basicPassword: config.WALLET_BASIC_PASSWORD,
    signingSecret: config.WALLET_SIGNING_SECRET,
    signatureAlgo: config.WALLET_SIGNATURE_ALGO,
    signatureEncoding: config.WALLET_SIGNATURE_ENCODING,
    startBalance: config.SIM_START_BALANCE,
    currencyDigits: { ...config.CURRENCY_DIGITS },
    tls,
    chaos,
    expectedHost: config.SIM_EXPECTED_HOST,
  });
  console.log(`wallet simulator listening on ${sim.url} (${tls ? 'HTTP/2 over TLS, HTTP/1.1 fallback' : 'HTTP/1.1'})`);
  console.log(`signature: HMAC-${config.WALLET_SIGNATURE_ALGO} ${config.WALLET_SIGNATURE_ENCODING}; new players start with ${config.SIM_START_BALANCE}`);
  if (chaos) console.log(`chaos on: seed ${chaos.seed}, rate ${chaos.rate}`);
  console.log(`admin API: ${sim.url}/__sim/ (see docs/simulator.md)`);

  return {
    close: () => sim.close(),
    onSignal: (signal) => console.log(`${signal}: closing`),
  };
}

async function startForRegistry(config: SimConfig, wallets: NonNullable<ReturnType<typeof loadSimWallets>>): Promise<Running> {
  const tls = tlsFrom(config);
  const chaos = config.SIM_CHAOS_SEED === undefined ? undefined : { seed: config.SIM_CHAOS_SEED, rate: config.SIM_CHAOS_RATE };
  const running = await startRegistrySimulators(wallets, { host: config.SIM_HOST, tls, startBalance: config.SIM_START_BALANCE, chaos });
  for (const entry of wallets) {
    const sim = running.sims.get(entry.id)!;
    console.log(`wallet ${entry.id}: simulator listening on ${sim.url} (HMAC-${entry.client.WALLET_SIGNATURE_ALGO} ${entry.client.WALLET_SIGNATURE_ENCODING}; admin API ${sim.url}/__sim/)`);
  }
  console.log(`new players start with ${config.SIM_START_BALANCE}${chaos ? `; chaos on: seed ${chaos.seed}, rate ${chaos.rate}` : ''}`);
  return {
    close: () => running.close(),
    onSignal: (signal) => console.log(`${signal}: closing`),
  };
}

runUntilSignal('simulator', start);
