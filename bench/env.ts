import { CREDENTIALS } from './requests';

/**
 * The environment the bench gives the processes it starts: the wallet simulator, and a server in
 * front of it (the gateway, its worker or the reference server), all with the bench's credentials.
 * The callers add what is theirs (log level, tracing, a child's NODE_PATH).
 */

/** The simulator (`src/sim/main.ts`) on loopback at `port`, every new player rich enough for any run. */
export function simulatorEnv(port: number): Record<string, string> {
  return {
    SIM_PORT: String(port),
    SIM_HOST: '127.0.0.1',
    SIM_START_BALANCE: '1000000000.00',
    WALLET_BASIC_USER: CREDENTIALS.basicUser,
    WALLET_BASIC_PASSWORD: CREDENTIALS.basicPassword,
    WALLET_SIGNING_SECRET: CREDENTIALS.signingSecret,
  };
}

/** Where a server listens and what it talks to. */
export interface ServerPlace {
  /** 0 for a process that serves nothing (a worker). */
  readonly port: number;
  readonly redisUrl: string;
  /** QUEUE_PREFIX: what keeps one server's keys apart from another's on one Redis. */
  readonly prefix: string;
  readonly walletUrl: string;
  /** GATEWAY_PROCESSES. */
  readonly processes: number;
}

/** A gateway, its worker or the reference server at `place`, signing as the simulator expects. */
export function serverEnv(place: ServerPlace): Record<string, string> {
  return {
    PORT: String(place.port),
    REDIS_URL: place.redisUrl,
    QUEUE_PREFIX: place.prefix,
    WALLET_BASE_URL: place.walletUrl,
    WALLET_BASIC_USER: CREDENTIALS.basicUser,
    WALLET_BASIC_PASSWORD: CREDENTIALS.basicPassword,
    WALLET_SIGNING_SECRET: CREDENTIALS.signingSecret,
    PROVIDER_ID: CREDENTIALS.providerId,
    ENGINE_API_KEY: CREDENTIALS.engineKey,
    GATEWAY_PROCESSES: String(place.processes),
  };
}
