import { retryJobId } from '../../src/duties/queues';
import { waitFor } from '../../src/lib/wait-for';
import { shardLayout } from '../../src/store/shards';
import { Code } from '../../src/wallet/codes';
import type { RunningWorker } from '../../workers/worker';
import { startHarness, newId, type Harness, type Player } from '../support/worker-harness';

/**
 * REDIS_SHARDS 4 on one Redis: the sharded key layout and queues (what a cluster runs), with the
 * real gateway side, a real worker and the simulator. Each player's records, token and queue jobs
 * sit in its shard; a lookup by id alone finds them; the worker drives every shard's queue and the
 * sweeper every shard's pending index.
 */
const SHARDS = 4;
let h: Harness;
let worker: RunningWorker;
const players: Player[] = [];

beforeAll(async () => {
  h = await startHarness({ label: 'sharded', env: { REDIS_SHARDS: String(SHARDS) } });
  worker = await h.startWorker();
  // Players until three shards have one.
  for (let i = 0; i < 40 && new Set(players.map(shardOf)).size < 3; i += 1) players.push(await h.newPlayer());
});

afterEach(() => h.sim.faults.clear());

afterAll(async () => {
  await h.close();
});

const shardOf = (p: Player): number => h.store.shardOf({ playerId: p.fields.player_id, siteId: p.fields.site_id });

const settled = (id: string) =>
  waitFor(`${id} final`, async () => {
    const record = await h.store.get(id);
    return record !== undefined && record.state !== 'pending' ? record : undefined;
  }, 25_000);

it('puts a player in one shard: session id, token ref and records carry its tag', async () => {
  const layout = shardLayout(h.prefix, SHARDS);
  expect(new Set(players.map((p) => layout.shardOfPlayer(p.fields.player_id, p.fields.site_id))).size).toBeGreaterThanOrEqual(3);
  for (const player of players.slice(0, 3)) {
    const shard = layout.shardOfPlayer(player.fields.player_id, player.fields.site_id);
    expect(player.session.sessionId.endsWith(`.${shard}`)).toBe(true);
    expect(player.session.tokenRef.endsWith(`.${shard}`)).toBe(true);
    const bet = await h.bet(player);
    for (const other of layout.all) {
      expect(await h.redis.exists(layout.keys(other).transaction(bet.transactionId))).toBe(other === shard ? 1 : 0);
    }
    expect(await h.redis.exists(layout.keys(shard).session(player.session.sessionId))).toBe(1);
    // Found by id alone (every shard asked) and in its own shard.
    expect(await h.store.get(bet.transactionId)).toMatchObject({ transactionId: bet.transactionId, state: 'succeeded' });
    expect(await h.store.get(bet.transactionId, (shard + 1) % SHARDS)).toBeUndefined();
  }
});

it('retries a credit from its shard queue, for players in different shards', async () => {
  const ids = await Promise.all(
    players.slice(0, 3).map(async (player) => {
      const bet = await h.bet(player);
      const id = newId('credit');
      h.sim.faults.failNext('credit', 2, Code.InternalServiceError, { transactionId: id });
      expect((await h.settleInline(player, 'credit', bet, { id })).next).toBe('retry');
      return id;
    }),
  );
  for (const id of ids) {
    expect(await settled(id)).toMatchObject({ state: 'succeeded', attempts: 3 });
    expect(h.sim.ledger.appliedCount(id)).toBe(1);
  }
});

it('sweeps every shard: a pending credit with no job behind it is driven again', async () => {
  const a = players[0]!;
  const b = players.find((p) => shardOf(p) !== shardOf(a))!;
  const claimed = await Promise.all([a, b].map(async (p) => h.claimOnly(p, 'credit', await h.bet(p), { leaseMs: -1 })));
  for (const record of claimed) expect(await h.duties.queues.retryOf(record).getJobState(retryJobId(record.transactionId))).toBe('unknown');
  await worker.sweepNow();
  for (const record of claimed) expect(await settled(record.transactionId)).toMatchObject({ state: 'succeeded' });
});

it('lists dead records of every shard, each with its shard', async () => {
  // One player per shard the players span (at least three, see beforeAll).
  const onePerShard = [...new Map(players.map((p) => [shardOf(p), p])).values()];
  const dead = await Promise.all(
    onePerShard.map(async (player) => {
      const { id } = await h.winAfter(player, (creditId) => h.sim.faults.failNext('credit', 4, Code.BetTransactionNotFoundInRound, { transactionId: creditId }));
      await h.inState(id, 'dead');
      return { transactionId: id, shard: shardOf(player) };
    }),
  );
  const listed = await h.store.deadBetween(0, Date.now(), 1000);
  expect(listed).toEqual(expect.arrayContaining(dead));
  for (const ref of dead) expect(await h.store.get(ref.transactionId, ref.shard)).toMatchObject({ state: 'dead' });
});
