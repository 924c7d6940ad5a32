import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { cpuMicrosOf } from '../src/lib/redis-cluster';
import { RedisServer } from '../src/lib/redis-server';
import { closeRedis, createRedis } from '../src/store/redis';
import { createSessionStore, type SessionStore } from '../src/store/sessions';
import { shardLayout } from '../src/store/shards';
import { createTransactionStore, type TransactionStore } from '../src/store/transactions';
import type { NewTransaction } from '../src/store/types';
import { encodeRequest } from '../src/wallet/protocol';
import { runToExit } from './in-process';
import { REFERENCE_CLAIM } from './reference-claim';

/**
 * `npx tsx bench/redis-cost.ts [bets] [rounds] [--callgrind | --scripts-only] [--keep]`: what a bet asks of Redis
 * (docs/performance.md, "What a bet asks of Redis"). On a private Redis, `bets` bets go through the
 * store's real steps, 32 lanes at a time (one session and player per lane): all claims, then all
 * settles (`succeeded`, with the wallet's request id in the attempt, as the gateway's inline
 * attempt settles it), with the ledger off and on, alternating, `rounds` times each; beside them
 * the bench reference's two steps per bet (its claim script, a `GET` and a `SET NX EX`, then a
 * `SET EX`: bench/reference-server.ts). Per bet and per step: Redis CPU (INFO cpu), the commands
 * the scripts ran and their time (INFO commandstats, which counts a script's inner commands), and,
 * with `--callgrind`, the instructions Redis executed (Redis run under valgrind's callgrind: a
 * figure that does not move with the box's load; CPU µs are then valgrind's, not Redis's; `--keep`
 * leaves its dumps, one per step measured, for `callgrind_annotate`). `--scripts-only` counts only
 * what runs inside `EVAL`/`EVALSHA` (not reading commands, writing replies, the event loop, nor the
 * reference's plain `SET`): the steadiest figure for an A/B of a script change. Also
 * Redis memory per settled record (`used_memory` delta, ledger off).
 */
const LANES = 32;
const SESSION_TTL_SECONDS = 1800;
const RETENTION_SECONDS = 3600;

interface StepCost {
  /** Redis CPU µs per bet (INFO cpu). */
  cpu: number;
  /** Instructions per bet (callgrind), when measured. */
  instructions?: number;
  /** Commands per bet, the scripts' own included, by name: [calls per bet, µs per bet]. */
  commands: Record<string, [number, number]>;
}

interface Lane {
  sessionId: string;
  tokenRef: string;
  token: string;
  playerId: string;
  siteId: string;
}

class Meter {
  constructor(
    private readonly admin: Redis,
    private readonly pid: number,
    private readonly callgrind: boolean,
    private readonly dir: string,
  ) {}

  async measure(bets: number, work: () => Promise<void>): Promise<StepCost> {
    await this.admin.config('RESETSTAT');
    if (this.callgrind) execFileSync('callgrind_control', ['-z', String(this.pid)], { stdio: 'ignore' });
    const before = cpuMicrosOf(await this.admin.info('cpu'));
    await work();
    const after = cpuMicrosOf(await this.admin.info('cpu'));
    const instructions = this.callgrind ? this.dumpInstructions() : undefined;
    const commands: Record<string, [number, number]> = {};
    for (const line of (await this.admin.info('commandstats')).split('\n')) {
      const m = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line);
      // The meter's own INFO and CONFIG are not the bet's.
      if (m === null || m[1] === 'info' || m[1] === 'config') continue;
      commands[m[1]!] = [fixed(Number(m[2]) / bets, 2), fixed(Number(m[3]) / bets, 2)];
    }
    return { cpu: fixed((after - before) / bets, 1), ...(instructions === undefined ? {} : { instructions: Math.round(instructions / bets) }), commands };
  }

  /** Dumps callgrind's counters since the last zero and returns the instructions they count. */
  private dumpInstructions(): number {
    const known = new Set(readdirSync(this.dir));
    execFileSync('callgrind_control', ['-d', String(this.pid)], { stdio: 'ignore' });
    const dump = readdirSync(this.dir).find((f) => f.startsWith('callgrind.out') && !known.has(f));
    if (dump === undefined) throw new Error('callgrind wrote no dump');
    const summary = /^(?:summary|totals): (\d+)/m.exec(readFileSync(join(this.dir, dump), 'utf8'));
    return Number(summary?.[1] ?? 0);
  }
}

function fixed(x: number, digits: number): number {
  return Number(x.toFixed(digits));
}

async function inLanes(bets: number, work: (lane: number, n: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: LANES }, async (_, lane) => {
      while (next < bets) {
        const n = next;
        next += 1;
        await work(lane, n);
      }
    }),
  );
}

async function openLanes(sessions: SessionStore): Promise<Lane[]> {
  const lanes: Lane[] = [];
  for (let i = 0; i < LANES; i += 1) {
    const player = { playerId: String(18446744073709551615n - BigInt(i)), siteId: '7' };
    const { session } = await sessions.create({ token: randomUUID(), ...player, currency: 'EUR', gameId: 'slot', balance: '1000000.00' }, Date.now(), 100);
    lanes.push({ sessionId: session!.sessionId, tokenRef: session!.tokenRef, token: session!.token, ...player });
  }
  return lanes;
}

function betRecord(lane: Lane): NewTransaction {
  const id = `b-${randomUUID().slice(0, 30)}`;
  const roundId = randomUUID();
  const fields = { token: lane.token, player_id: lane.playerId, site_id: lane.siteId, provider_id: '1', game_id: 'slot', currency: 'EUR' };
  return {
    transactionId: id, kind: 'debit', sessionId: lane.sessionId, tokenRef: lane.tokenRef, playerId: lane.playerId, siteId: lane.siteId, roundId, walletRoundId: roundId,
    amount: '1.25', currency: 'EUR', roundClosed: false, referenceTransactionId: null, bodyHash: `h-${randomUUID()}`, walletOperation: 'debit',
    walletBody: encodeRequest('debit', Object.assign(fields, { amount: '1.25', round_id: roundId, transaction_id: id, round_closed: false })), isCompensation: false, createdAt: Date.now(),
  };
}

async function gatewayRound(redisUrl: string, meter: Meter, admin: Redis, ledger: boolean, bets: number, round: number) {
  const prefix = `redis-cost-${ledger ? 'on' : 'off'}-${round}`;
  const layout = shardLayout(prefix, 1);
  const redis = createRedis(redisUrl, { name: prefix });
  try {
    const store: TransactionStore = createTransactionStore(redis, layout, RETENTION_SECONDS, Date.now, ledger);
    const lanes = await openLanes(createSessionStore(redis, layout, SESSION_TTL_SECONDS));
    const records: NewTransaction[] = new Array<NewTransaction>(bets);
    const memoryBefore = Number(/used_memory:(\d+)/.exec(await admin.info('memory'))?.[1]);
    const claim = await meter.measure(bets, () =>
      inLanes(bets, async (lane, n) => {
        const record = betRecord(lanes[lane]!);
        records[n] = record;
        const claimed = await store.claim({ record, exactAmount: '1.25', leaseUntil: Date.now() + 10_000, sessionTtlSeconds: SESSION_TTL_SECONDS });
        if (claimed.kind !== 'claimed') throw new Error(`claim: ${claimed.kind}`);
      }),
    );
    const settle = await meter.measure(bets, () =>
      inLanes(bets, async (_lane, n) => {
        const ok = await store.settle(records[n]!, {
          state: 'succeeded', expect: ['pending'], attempts: 1, lastWalletCode: 1, history: [1], balance: '998.75', sessionBalance: '998.75',
          attempt: { at: Date.now(), result: 1, latencyMs: 3, walletRequestId: randomUUID() },
        });
        if (!ok) throw new Error('settle refused');
      }),
    );
    const memoryAfter = Number(/used_memory:(\d+)/.exec(await admin.info('memory'))?.[1]);
    const sample = layout.keys(0).transaction(records[0]!.transactionId);
    return {
      ledger,
      claim,
      settle,
      perBet: { cpu: fixed(claim.cpu + settle.cpu, 1), ...(claim.instructions === undefined ? {} : { instructions: claim.instructions + settle.instructions! }) },
      // With the ledger on, the outbox's entries are part of the delta.
      bytesPerRecord: Math.round((memoryAfter - memoryBefore) / bets),
      settledRecordMemoryUsage: Number(await redis.call('MEMORY', 'USAGE', sample, 'SAMPLES', '0')),
      recordFields: await redis.hlen(sample),
    };
  } finally {
    await closeRedis(redis);
  }
}

async function referenceRound(redisUrl: string, meter: Meter, bets: number, round: number) {
  const prefix = `redis-cost-ref-${round}`;
  const redis = createRedis(redisUrl, { name: prefix }) as Redis & { refClaim(session: string, tx: string, body: string, ttl: number): Promise<[number, string?]> };
  redis.defineCommand('refClaim', { numberOfKeys: 2, lua: REFERENCE_CLAIM });
  try {
    const sessions = Array.from({ length: LANES }, (_, i) => `${prefix}:refsession:${i}`);
    for (const key of sessions) await redis.set(key, JSON.stringify({ token: randomUUID(), player_id: '18446744073709551615', site_id: '7', game_id: 'slot', currency: 'EUR' }));
    const cost = await meter.measure(bets, () =>
      inLanes(bets, async (lane) => {
        const id = `b-${randomUUID().slice(0, 30)}`;
        const txKey = `${prefix}:reftx:${id}`;
        const body = JSON.stringify({ round_id: randomUUID(), transaction_id: id, amount: 1.25 });
        const [claimed] = await redis.refClaim(sessions[lane]!, txKey, body, RETENTION_SECONDS);
        if (claimed !== 2) throw new Error(`reference claim: ${claimed}`);
        await redis.set(txKey, JSON.stringify({ state: 'succeeded', balance: 998.75, code: 1 }), 'EX', RETENTION_SECONDS);
      }),
    );
    return cost;
  } finally {
    await closeRedis(redis);
  }
}

runToExit(async () => {
  const positional = process.argv.slice(2).filter((a) => !a.startsWith('--'));
  const scriptsOnly = process.argv.includes('--scripts-only');
  const callgrind = scriptsOnly || process.argv.includes('--callgrind');
  const keep = callgrind && process.argv.includes('--keep');
  const bets = Number(positional[0] ?? 5000);
  const rounds = Number(positional[1] ?? 3);
  const dir = mkdtempSync(join(tmpdir(), 'redis-cost-'));
  const launcher = ['valgrind', '--tool=callgrind', `--callgrind-out-file=${join(dir, 'callgrind.out.%p')}`, ...(scriptsOnly ? ['--collect-atstart=no', '--toggle-collect=evalGenericCommand'] : [])];
  const server = await RedisServer.start(callgrind ? { dir, launcher } : { dir });
  const admin = createRedis(server.url, { name: 'redis-cost-meter' });
  try {
    const meter = new Meter(admin, server.pid, callgrind, server.dir);
    const gateway: Awaited<ReturnType<typeof gatewayRound>>[] = [];
    const reference: StepCost[] = [];
    for (let r = 0; r < rounds; r += 1) {
      for (const ledger of r % 2 === 0 ? [false, true] : [true, false]) {
        const result = await gatewayRound(server.url, meter, admin, ledger, bets, r);
        console.log(JSON.stringify(result));
        gateway.push(result);
      }
      const ref = await referenceRound(server.url, meter, bets, r);
      console.log(JSON.stringify({ reference: ref }));
      reference.push(ref);
    }
    const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const summary = (pick: (r: (typeof gateway)[number]) => number, ledger: boolean) => median(gateway.filter((g) => g.ledger === ledger).map(pick));
    const figure = callgrind ? 'instructions' : 'cpu';
    const refPerBet = median(reference.map((r) => (callgrind ? r.instructions! : r.cpu)));
    const off = summary((g) => (callgrind ? g.perBet.instructions! : g.perBet.cpu), false);
    const on = summary((g) => (callgrind ? g.perBet.instructions! : g.perBet.cpu), true);
    console.log(
      JSON.stringify({
        bets,
        rounds,
        figure,
        median: {
          reference: refPerBet,
          off: { perBet: off, claim: summary((g) => (callgrind ? g.claim.instructions! : g.claim.cpu), false), settle: summary((g) => (callgrind ? g.settle.instructions! : g.settle.cpu), false), overReference: fixed(off / refPerBet, 2) },
          on: { perBet: on, claim: summary((g) => (callgrind ? g.claim.instructions! : g.claim.cpu), true), settle: summary((g) => (callgrind ? g.settle.instructions! : g.settle.cpu), true), overReference: fixed(on / refPerBet, 2) },
          bytesPerRecord: summary((g) => g.bytesPerRecord, false),
        },
      }),
    );
  } finally {
    await closeRedis(admin);
    await server.stop();
    if (keep) console.log(`callgrind dumps (one per step measured; callgrind_annotate reads them): ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
});
