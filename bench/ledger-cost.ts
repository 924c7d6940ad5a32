import { randomUUID } from 'node:crypto';
import { cpuMicrosOf } from '../src/lib/redis-cluster';
import { askRedis, RedisServer } from '../src/lib/redis-server';
import { closeRedis, createRedis } from '../src/store/redis';
import { createSessionStore } from '../src/store/sessions';
import { shardLayout } from '../src/store/shards';
import { createTransactionStore } from '../src/store/transactions';
import { encodeRequest } from '../src/wallet/protocol';
import { runToExit } from './in-process';

/**
 * `npx tsx bench/ledger-cost.ts [bets] [rounds]`: what the ledger's outbox costs Redis per bet
 * (docs/performance.md, "The ledger's outbox"). A bet's two Lua steps (claim, then settle
 * succeeded, with the wallet's request id in the attempt; the claim names the engine call's
 * request id, a generated uuid) on a private Redis, `bets` at a time with
 * the ledger off and on, alternating, `rounds` times each: Redis CPU per bet (INFO cpu), and the
 * outbox's memory per change (MEMORY USAGE over XLEN). Nothing drains the outbox here.
 */
const CONCURRENCY = 32;

async function cpuMicros(port: number): Promise<number> {
  return askRedis(port, async (client) => cpuMicrosOf(await client.info('cpu')));
}

async function run(redisUrl: string, port: number, ledger: boolean, bets: number, round: number) {
  const prefix = `ledger-cost-${ledger ? 'on' : 'off'}-${round}`;
  const layout = shardLayout(prefix, 1);
  const redis = createRedis(redisUrl, { name: prefix });
  try {
    const store = createTransactionStore(redis, layout, 3600, Date.now, ledger);
    const sessions = createSessionStore(redis, layout, 3600);
    const player = { playerId: '18446744073709551615', siteId: '7' };
    const { session } = await sessions.create({ token: randomUUID(), ...player, currency: 'EUR', gameId: 'slot', balance: '1000000.00' }, Date.now(), 100);
    const fields = { token: session!.token, player_id: player.playerId, site_id: player.siteId, provider_id: '1', game_id: 'slot', currency: 'EUR' };
    const bet = async (): Promise<void> => {
      const id = `b-${randomUUID().slice(0, 30)}`;
      const roundId = randomUUID();
      const record = {
        transactionId: id, kind: 'debit' as const, sessionId: session!.sessionId, tokenRef: session!.tokenRef, ...player, roundId, walletRoundId: roundId,
        amount: '1.25', currency: 'EUR', roundClosed: false, referenceTransactionId: null, bodyHash: `h-${id}`, walletOperation: 'debit' as const,
        walletBody: encodeRequest('debit', { ...fields, amount: '1.25', round_id: roundId, transaction_id: id, round_closed: false }), isCompensation: false, createdAt: Date.now(),
      };
      const claimed = await store.claim({ record, exactAmount: '1.25', leaseUntil: Date.now() + 10_000, engineRequestId: randomUUID() });
      if (claimed.kind !== 'claimed') throw new Error(`claim: ${claimed.kind}`);
      const ok = await store.settle({ ...record, attempts: 0 } as never, {
        state: 'succeeded', expect: ['pending'], attempts: 1, lastWalletCode: 1, history: [1], balance: '998.75', sessionBalance: '998.75',
        attempt: { at: Date.now(), result: 1, latencyMs: 3, walletRequestId: randomUUID() },
      });
      if (!ok) throw new Error('settle refused');
    };
    const before = await cpuMicros(port);
    let next = 0;
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      while (next < bets) {
        next += 1;
        await bet();
      }
    }));
    const after = await cpuMicros(port);
    const key = layout.keys(0).ledgerOutbox();
    const length = ledger ? await redis.xlen(key) : 0;
    const bytes = ledger ? Number(await redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0')) : 0;
    return { ledger, redisCpuMicrosPerBet: Number(((after - before) / bets).toFixed(1)), outboxEntries: length, bytesPerEntry: length > 0 ? Math.round(bytes / length) : 0 };
  } finally {
    await closeRedis(redis);
  }
}

runToExit(async () => {
  const bets = Number(process.argv[2] ?? 5000);
  const rounds = Number(process.argv[3] ?? 3);
  const redis = await RedisServer.start();
  try {
    const results = [];
    for (let round = 0; round < rounds; round += 1) {
      for (const ledger of round % 2 === 0 ? [false, true] : [true, false]) {
        const result = await run(redis.url, redis.port, ledger, bets, round);
        console.log(JSON.stringify(result));
        results.push(result);
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const off = median(results.filter((r) => !r.ledger).map((r) => r.redisCpuMicrosPerBet));
    const on = median(results.filter((r) => r.ledger).map((r) => r.redisCpuMicrosPerBet));
    console.log(JSON.stringify({ bets, rounds, medianRedisCpuMicrosPerBet: { off, on }, added: Number((on - off).toFixed(1)), addedPercent: Number((((on - off) / off) * 100).toFixed(1)) }));
  } finally {
    await redis.stop();
  }
});
