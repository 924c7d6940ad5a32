import { loadGatewayConfig } from '../../src/config/env';
import { startGateway, type RunningGateway } from '../../src/main/gateway';
import { createLogger } from '../../src/observability/logger';
import { startSimulator, type RunningSimulator } from '../../src/sim/index';
import { deletePrefix, redisUrl, testPrefix } from './prefix';
import { logSink } from './log-sink';

/**
 * The gateway as `npm start` wires it (startGateway: engine API, launch, operators, admin with
 * Basic auth, and the demo game), in this process, over real Redis under its own prefix and the
 * real simulator; its log lines kept in memory.
 */
export const WIRED = { engineKey: 'wired-engine-key', adminUser: 'ops', adminPassword: 'ops-password-123' } as const;
export const WIRED_WALLET = { user: 'gw', password: 'gw-pass', secret: 'gw-secret' } as const;

export interface WiredGateway {
  readonly prefix: string;
  readonly gateway: RunningGateway;
  readonly sim: RunningSimulator;
  readonly url: string;
  /** `Authorization` for the admin routes. */
  readonly adminAuth: string;
  readonly logs: string[];
  close(): Promise<void>;
}

/** The environment of a gateway under `prefix` against the simulator at `walletUrl` (no admin, no demo). */
export function wiredEnv(prefix: string, walletUrl: string): Record<string, string> {
  return {
    PORT: '0',
    REDIS_URL: redisUrl(),
    QUEUE_PREFIX: prefix,
    WALLET_BASE_URL: walletUrl,
    WALLET_BASIC_USER: WIRED_WALLET.user,
    WALLET_BASIC_PASSWORD: WIRED_WALLET.password,
    WALLET_SIGNING_SECRET: WIRED_WALLET.secret,
    WALLET_TIMEOUT_MS: '2000',
    PROVIDER_ID: '1',
    ENGINE_API_KEY: WIRED.engineKey,
  };
}

export const basicAuth = (user: string, password: string): string => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

export async function startWiredGateway(label: string): Promise<WiredGateway> {
  const prefix = testPrefix(label);
  const sim = await startSimulator({ basicUser: WIRED_WALLET.user, basicPassword: WIRED_WALLET.password, signingSecret: WIRED_WALLET.secret });
  const { logs, destination } = logSink();
  const config = loadGatewayConfig({
    ...wiredEnv(prefix, sim.url),
    ADMIN_USER: WIRED.adminUser,
    ADMIN_PASSWORD: WIRED.adminPassword,
    DEMO_GAME: 'true',
  });
  const gateway = await startGateway(config, createLogger({ level: 'info', name: label, destination }), { host: '127.0.0.1' });
  return {
    prefix,
    gateway,
    sim,
    url: gateway.url,
    adminAuth: basicAuth(WIRED.adminUser, WIRED.adminPassword),
    logs,
    async close() {
      await gateway.close();
      await sim.close();
      await deletePrefix(prefix);
    },
  };
}
