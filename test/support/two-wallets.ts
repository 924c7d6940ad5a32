import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import { loadGatewayConfig } from '../../src/config/env';
import type { Closers } from '../../src/lib/lifecycle';
import { startGateway, type RunningGateway } from '../../src/main/gateway';
import { createLogger } from '../../src/observability/logger';
import { createMetrics } from '../../src/observability/metrics';
import { startSimulator, type RunningSimulator } from '../../src/sim';

/** One wallet's side: its simulator checks these credentials, the registry gives them to the gateway. */
export interface WalletSide {
  readonly id: string;
  readonly user: string;
  readonly password: string;
  readonly secret: string;
  readonly provider: string;
}

export interface TwoWalletsOptions {
  /** Names the registry's directory and the gateway's logger. */
  readonly label: string;
  /** HMAC-SHA256, hex; its password reaches the registry as `{ env: 'TEST_A_PASSWORD' }`. */
  readonly a: WalletSide;
  /** HMAC-SHA512, base64. */
  readonly b: WalletSide;
  /** The registry's engines, and each wallet's fields beside (or instead of) the ones written here; `dir` holds `files`. */
  registry(dir: string): { readonly engines: readonly unknown[]; readonly a?: Record<string, unknown>; readonly b?: Record<string, unknown> };
  /** Written into the registry's directory first (secrets given as `{ file }`). */
  readonly files?: Readonly<Record<string, string>>;
  /** The gateway's variables beside the registry's (Redis, QUEUE_PREFIX, ADMIN_*, …). */
  readonly env: Readonly<Record<string, string>>;
  /** Where the gateway's log lines go. */
  readonly logs: Writable;
}

export interface TwoWallets {
  readonly simA: RunningSimulator;
  readonly simB: RunningSimulator;
  readonly gateway: RunningGateway;
  /** The gateway's variables: a worker of the same deployment starts with them. */
  readonly env: Record<string, string>;
}

/** Both wallets' `timeout_ms`: the deadline of one call. */
export const TWO_WALLETS_TIMEOUT_MS = 2000;

/**
 * Two wallets of one registry (contract 11) in front of two real simulators over HTTP, each checking
 * its own Basic credentials and signature, and the real gateway on them; every part is deferred on
 * `closers`.
 */
export async function startTwoWallets(closers: Closers, options: TwoWalletsOptions): Promise<TwoWallets> {
  const { a, b } = options;
  const simA = await startSimulator({ basicUser: a.user, basicPassword: a.password, signingSecret: a.secret });
  closers.defer('simulator a', () => simA.close());
  const simB = await startSimulator({ basicUser: b.user, basicPassword: b.password, signingSecret: b.secret, signatureAlgo: 'sha512', signatureEncoding: 'base64' });
  closers.defer('simulator b', () => simB.close());
  const dir = mkdtempSync(join(tmpdir(), `wgw-${options.label}-`));
  closers.defer('registry', () => rmSync(dir, { recursive: true, force: true }));
  for (const [name, text] of Object.entries(options.files ?? {})) writeFileSync(join(dir, name), text);
  const registry = options.registry(dir);
  const file = join(dir, 'wallets.json');
  writeFileSync(
    file,
    JSON.stringify({
      wallets: [
        { id: a.id, base_url: simA.url, basic_user: a.user, basic_password: { env: 'TEST_A_PASSWORD' }, signing_secret: a.secret, provider_id: a.provider, timeout_ms: TWO_WALLETS_TIMEOUT_MS, ...registry.a },
        {
          id: b.id,
          base_url: simB.url,
          basic_user: b.user,
          basic_password: b.password,
          signing_secret: b.secret,
          signature_algo: 'sha512',
          signature_encoding: 'base64',
          provider_id: b.provider,
          timeout_ms: TWO_WALLETS_TIMEOUT_MS,
          ...registry.b,
        },
      ],
      engines: registry.engines,
    }),
  );
  const env = { PORT: '0', WALLETS_FILE: file, TEST_A_PASSWORD: a.password, RETRY_DELAY_UNIT: 'ms', LOG_LEVEL: 'debug', ...options.env };
  const gateway = await startGateway(loadGatewayConfig(env), createLogger({ level: 'debug', name: options.label, destination: options.logs }), {
    host: '127.0.0.1',
    metrics: createMetrics({ defaultMetrics: false }),
    drainTimeoutMs: 0,
  });
  closers.defer('gateway', () => gateway.close());
  return { simA, simB, gateway, env };
}
