import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import Redis from 'ioredis';
import { loadGatewayConfig, loadWorkerConfig } from '../../src/config/env';
import { freeClusterNodePort, freePort } from '../../src/lib/free-port';
import { Child } from '../../src/lib/child';
import { RedisServer } from '../../src/lib/redis-server';
import { waitFor } from '../../src/lib/wait-for';
import { startGateway } from '../../src/main/gateway';
import { createLogger } from '../../src/observability/logger';
import { startSimulator, type RunningSimulator } from '../../src/sim';
import { startWorker } from '../../workers/worker';

/**
 * A start that fails half-way leaves nothing open: the gateway whose port is taken, the worker
 * whose job schedulers Redis refuses. Each runs against a private redis-server, so its CLIENT LIST
 * holds only their connections and this test's own.
 */
const WALLET = { user: 'gw', password: 'gw-pass', secret: 'gw-secret' };
const silent = createLogger({ level: 'silent', name: 'lifecycle-test' });

let redisServer: RedisServer;
let admin: Redis;
let sim: RunningSimulator;
let blocker: Server | undefined;

beforeAll(async () => {
  redisServer = await RedisServer.start();
  admin = new Redis(redisServer.url, { connectionName: 'lifecycle-test-admin' });
  // A user that may do everything but run scripts: BullMQ's upsertJobScheduler is a script.
  await admin.call('ACL', 'SETUSER', 'noscripts', 'on', '>noscripts-pass', '~*', '&*', '+@all', '-@scripting');
  sim = await startSimulator({ basicUser: WALLET.user, basicPassword: WALLET.password, signingSecret: WALLET.secret });
});

afterEach(async () => {
  const b = blocker;
  blocker = undefined;
  if (b !== undefined) await new Promise<void>((resolve) => b.close(() => resolve()));
});

afterAll(async () => {
  await sim?.close();
  admin?.disconnect();
  await redisServer?.stop();
});

async function connectionsReceived(): Promise<number> {
  const info = await admin.info('stats');
  return Number(/^total_connections_received:(\d+)/m.exec(info)?.[1]);
}

/** Names of the connections Redis holds, this test's own left out. */
async function otherClients(): Promise<string[]> {
  const list = (await admin.client('LIST')) as string;
  return list
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => /\bname=(\S*)/.exec(line)?.[1] ?? '')
    .filter((name) => name !== 'lifecycle-test-admin');
}

/** The failed start did connect (at least `opened` connections came), and every one is gone again. */
async function allClosedAfter(before: number, opened: number): Promise<void> {
  await waitFor(`${opened} connections opened and closed again`, async () => (await connectionsReceived()) >= before + opened && (await otherClients()).length === 0, 10_000);
}

async function takenPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  blocker = server;
  return (server.address() as AddressInfo).port;
}

const walletEnv = () => ({
  WALLET_BASE_URL: sim.url,
  WALLET_BASIC_USER: WALLET.user,
  WALLET_BASIC_PASSWORD: WALLET.password,
  WALLET_SIGNING_SECRET: WALLET.secret,
  PROVIDER_ID: '1',
});

it('a gateway whose port is taken rejects, and closes the Redis connections it had opened', async () => {
  const port = await takenPort();
  const config = loadGatewayConfig({ ...walletEnv(), PORT: String(port), REDIS_URL: redisServer.url, QUEUE_PREFIX: 'lifecycle-gw', ENGINE_API_KEY: 'k' });
  const before = await connectionsReceived();
  await expect(startGateway(config, silent, { host: '127.0.0.1' })).rejects.toThrow(/EADDRINUSE/);
  // The store's and the queues' connections.
  await allClosedAfter(before, 2);
});

it('a worker whose job schedulers Redis refuses rejects, and closes its connections and its metrics port', async () => {
  const url = new URL(redisServer.url);
  url.username = 'noscripts';
  url.password = 'noscripts-pass';
  const metricsPort = await freePort();
  const config = loadWorkerConfig({ ...walletEnv(), REDIS_URL: url.toString(), QUEUE_PREFIX: 'lifecycle-worker', WORKER_METRICS_PORT: String(metricsPort), LOG_LEVEL: 'silent' });
  const before = await connectionsReceived();
  await expect(startWorker({ config, logger: silent })).rejects.toThrow(/NOPERM/);
  // The store's and BullMQ's connections, and the blocking connection of each of the three workers.
  await allClosedAfter(before, 5);
  await expect(fetch(`http://127.0.0.1:${metricsPort}/healthz`)).rejects.toThrow();
});

it('a worker whose metrics port is taken rejects before it opens anything', async () => {
  const port = await takenPort();
  const config = loadWorkerConfig({ ...walletEnv(), REDIS_URL: redisServer.url, QUEUE_PREFIX: 'lifecycle-worker-port', WORKER_METRICS_PORT: String(port), LOG_LEVEL: 'silent' });
  const before = await connectionsReceived();
  await expect(startWorker({ config, logger: silent })).rejects.toThrow(/EADDRINUSE/);
  expect(await connectionsReceived()).toBe(before);
  expect(await otherClients()).toEqual([]);
});

it('a child process whose command is missing rejects its start by name, and stopping it does not wait for an exit that never comes', async () => {
  const missing = new Child({ name: 'sentinel-1', command: 'wgw-no-such-command', args: [], env: {} });
  await expect(missing.start()).rejects.toThrow('sentinel-1: wgw-no-such-command could not be started (ENOENT: not installed?)');
  await missing.stop(100);
  expect(missing.isRunning()).toBe(false);
});

describe('freePort', () => {
  it('gives a port below the ephemeral range that a server can listen on, and a different one while it is held', async () => {
    const port = await freePort();
    expect(port).toBeGreaterThanOrEqual(20_000);
    expect(port).toBeLessThan(32_768);
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    try {
      const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
      expect(ports).not.toContain(port);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it("gives a cluster node a port whose bus port (+10000) is free too, both below the ephemeral range", async () => {
    const held = await Promise.all(
      Array.from({ length: 2 }, async () => {
        const port = await freeClusterNodePort();
        expect(port).toBeGreaterThanOrEqual(20_000);
        expect(port + 10_000).toBeLessThan(32_768);
        // Both ends listen: the node's own port and its bus port.
        return Promise.all([port, port + 10_000].map((p) => new Promise<ReturnType<typeof createServer>>((resolve) => {
          const server = createServer();
          server.listen(p, '127.0.0.1', () => resolve(server));
        })));
      }),
    );
    for (const server of held.flat()) await new Promise<void>((resolve) => server.close(() => resolve()));
  });
});
