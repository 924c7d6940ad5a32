import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { loadGatewayConfig } from '../src/config/env';
import { startGateway, type RunningGateway } from '../src/main/gateway';
import { createLogger } from '../src/observability/logger';
import { createMetrics } from '../src/observability/metrics';
import { startSimulator, type RunningSimulator } from '../src/sim';

/**
 * What the small Redis benches (wait-cost, cluster-cost) share: the simulator and one gateway in
 * the bench process on a fresh QUEUE_PREFIX, one session per lane, and bets sent lane by lane.
 */
const WALLET = { user: 'gw', password: 'gw-pass', secret: 'gw-secret' } as const;
export const BENCH_API_KEY = 'in-process-bench-key';

const silent = new Writable({ write: (_chunk, _encoding, done) => done() });

export function startBenchSimulator(): Promise<RunningSimulator> {
  return startSimulator({ basicUser: WALLET.user, basicPassword: WALLET.password, signingSecret: WALLET.secret });
}

export interface BenchGateway {
  readonly gateway: RunningGateway;
  /** Names this gateway's prefix, ids and tokens. */
  readonly nonce: string;
}

/** A gateway on `env`'s Redis (REDIS_URL, REDIS_CLUSTER_NODES, REDIS_MIN_REPLICAS …) with a fresh prefix. */
export async function startBenchGateway(name: string, sim: RunningSimulator, env: Record<string, string>): Promise<BenchGateway> {
  const nonce = randomBytes(4).toString('hex');
  const config = loadGatewayConfig({
    PORT: '0',
    ...env,
    QUEUE_PREFIX: `${name}-${nonce}`,
    WALLET_BASE_URL: sim.url,
    WALLET_BASIC_USER: WALLET.user,
    WALLET_BASIC_PASSWORD: WALLET.password,
    WALLET_SIGNING_SECRET: WALLET.secret,
    PROVIDER_ID: '1',
    ENGINE_API_KEY: BENCH_API_KEY,
    GATEWAY_PROCESSES: '1',
  });
  const gateway = await startGateway(config, createLogger({ level: 'silent', name, destination: silent }), { host: '127.0.0.1', metrics: createMetrics({ defaultMetrics: false }) });
  return { gateway, nonce };
}

/** One session a lane, players 1 … lanes. */
export async function launchLanes({ gateway, nonce }: BenchGateway, lanes: number): Promise<string[]> {
  const sessions: string[] = [];
  for (let i = 0; i < lanes; i += 1) {
    const res = await fetch(`${gateway.url}/launch?token=${nonce}-${i}&player_id=${i + 1}&site_id=1&currency=EUR&game_id=g`, { headers: { accept: 'application/json' } });
    sessions.push(((await res.json()) as { session_id: string }).session_id);
  }
  return sessions;
}

/** `bets` bets of 0.01 over the lanes, each lane one at a time; every answer must be 200. Each bet's latency (ms) goes to `onLatency`. */
export async function betAll({ gateway, nonce }: BenchGateway, sessions: readonly string[], bets: number, onLatency: (ms: number) => void = () => undefined): Promise<void> {
  let next = 0;
  await Promise.all(
    sessions.map(async (sessionId, lane) => {
      for (let i = next++; i < bets; i = next++) {
        const t0 = performance.now();
        const id = `${nonce}-${lane}-${i}`;
        const res = await fetch(`${gateway.url}/engine/v1/sessions/${sessionId}/bet`, {
          method: 'POST',
          headers: { authorization: `Bearer ${BENCH_API_KEY}`, 'content-type': 'application/json' },
          body: `{"round_id":"${id}","transaction_id":"${id}","amount":0.01}`,
        });
        await res.arrayBuffer();
        onLatency(performance.now() - t0);
        if (res.status !== 200) throw new Error(`bet answered ${res.status}`);
      }
    }),
  );
}

/** A one-shot bench script's end: exit 0 when `main` resolves, 1 with its error (open handles do not keep it alive). */
export function runToExit(main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
