import Redis from 'ioredis';
import { serverEnv } from '../../bench/env';
import { runLoad } from '../../bench/load';
import { CREDENTIALS, Ids, PlacedQueue, authenticateBody, engineRequests, identities, walletHeaders } from '../../bench/requests';
import { startSimulator, type RunningSimulator } from '../../src/sim';
import { deletePrefix, redisUrl, testPrefix } from '../support/prefix';
import { Child, baseEnv, tsEntry } from '../../src/lib/child';
import { freePort } from '../../src/lib/free-port';
import { waitFor } from '../../src/lib/wait-for';

/**
 * The bench's plumbing, once and small: the reference server as a child process against the
 * simulator, one bet and its win driven through the bench's autocannon driver. No timing is asserted.
 */
let sim: RunningSimulator;
let ref: Child;
let url: string;
const prefix = testPrefix('bench');
const player = identities(1, 'smoke')[0] as (ReturnType<typeof identities>)[number];

beforeAll(async () => {
  sim = await startSimulator({ basicUser: CREDENTIALS.basicUser, basicPassword: CREDENTIALS.basicPassword, signingSecret: CREDENTIALS.signingSecret });
  const body = authenticateBody(player);
  const auth = await fetch(`${sim.url}/api/wallet/authenticate`, { method: 'POST', body, headers: walletHeaders(body) });
  expect(auth.status).toBe(200);
  const redis = new Redis(redisUrl());
  await redis.set(`${prefix}:refsession:s0`, JSON.stringify(player));
  redis.disconnect();

  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  ref = new Child({
    name: 'reference server',
    args: tsEntry('bench/reference-server.ts'),
    env: { ...baseEnv(), ...serverEnv({ port, redisUrl: redisUrl(), prefix, walletUrl: sim.url, processes: 1 }) },
  });
  await ref.start();
  await waitFor('reference server', async () => (await fetch(`${url}/healthz`)).status === 200, 20_000, { alive: () => ref.isRunning(), context: () => ref.output() });
}, 30_000);

afterAll(async () => {
  await ref?.stop();
  await sim?.close();
  await deletePrefix(prefix);
});

it('one bet through the reference server reaches the wallet once, with every digit of the player id', async () => {
  const bets = new PlacedQueue();
  const result = await runLoad({ url, connections: 1, durationSec: 10, amount: 1, request: engineRequests('bet', new Ids(), ['s0'], bets) });
  expect(result).toMatchObject({ requests: 1, errors: 0, statuses: { 200: 1 } });
  const placed = bets.take();
  expect(placed).toBeDefined();
  const tx = sim.ledger.transaction(placed?.transactionId ?? '');
  expect(tx).toMatchObject({ op: 'debit', playerId: player.player_id, amount: '0.01', timesApplied: 1 });
});

it('one win through the reference server credits the wallet once, naming its bet', async () => {
  const ids = new Ids();
  const bets = new PlacedQueue();
  await runLoad({ url, connections: 1, durationSec: 10, amount: 1, request: engineRequests('bet', ids, ['s0'], bets) });
  const bet = bets.sample(1)[0];
  const result = await runLoad({ url, connections: 1, durationSec: 10, amount: 1, request: engineRequests('win', ids, ['s0'], bets) });
  expect(result).toMatchObject({ requests: 1, errors: 0, statuses: { 200: 1 } });
  const credits = sim.ledger.transactions().filter((tx) => tx.op === 'credit' && tx.referenceTransactionId === bet?.transactionId);
  expect(credits).toHaveLength(1);
  expect(credits[0]).toMatchObject({ playerId: player.player_id, amount: '0.02', timesApplied: 1 });
});
