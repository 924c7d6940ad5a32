import { loadWorkerConfig } from '../config/env';
import { openLedgerDb, type LedgerDb } from '../ledger/db';
import { everyRow } from '../ledger/history';
import { ownLedgerDb, type OwnLedgerDb } from '../ledger/own-database';
import { rowOf } from '../ledger/rows';
import { ledgerLag, type LedgerLag } from '../ledger/status';
import { proxyFor } from '../lib/tcp-proxy';
import { walletLayout } from '../registry/wallet-layout';
import { closeRedis, createRedis, redisTargetOf, type RedisClient } from '../store/redis';
import { readRecordHashes, zsetPages } from '../store/record-scan';
import type { ShardLayout } from '../store/shards';
import type { LedgerChange, RecordState } from './ledger-checker';

/**
 * The soak's ledger (`--ledger-outage S`, contract 12): a PostgreSQL of the run's own (a database
 * made on the server at DATABASE_URL and dropped after, else an embedded PGlite in a temp dir),
 * reached by the gateways and workers through a TCP proxy the run cuts for S seconds mid-run
 * (connections dropped, new ones refused). It watches the outboxes' length and lag from Redis,
 * waits for them to drain at the end, and reads what the ledger checker compares: every record
 * in Redis and every row of the ledger.
 */
export interface SoakLedger {
  /** Where PostgreSQL came from, for the report. */
  readonly kind: OwnLedgerDb['kind'];
  /** DATABASE_URL for the gateways and workers: through the proxy. */
  readonly viaProxy: string;
  /** Watches the outboxes from Redis; call once the children's environment is known. */
  connect(env: Readonly<Record<string, string>>): void;
  /** Cuts the connection once `fraction()` reaches `at`, for `seconds`; resolves once it is back. */
  outage(seconds: number, at: number, fraction: () => number, log: (line: string) => void): Promise<void>;
  /** Polls until every outbox is empty, or the deadline passes; the time it took. */
  drained(deadline: number): Promise<{ readonly ms: number; readonly left: LedgerLag }>;
  /**
   * Every record in Redis and every ledger row, per wallet, once the outbox is drained: Redis read
   * before and after the ledger, until both reads agree (work still settling moves a record on).
   */
  snapshot(deadline: number): Promise<Map<string, WalletSnapshot>>;
  /** The outage's figures, for the report. */
  readonly watch: OutboxWatch;
  close(): Promise<void>;
}

export interface WalletSnapshot {
  readonly redis: RecordState[];
  readonly changes: LedgerChange[];
  readonly newest: RecordState[];
}

export interface OutboxWatch {
  cutAt?: number;
  restoredAt?: number;
  /** The most entries waiting, and the oldest's age, while the connection was cut (and until the first sample after). */
  peakLength: number;
  peakLagSeconds: number;
  /** The first sample after the connection came back with the lag under 2 s. */
  caughtUpAt?: number;
  samples: number;
}

/** How often the outboxes are looked at during the run. */
const WATCH_EVERY_MS = 500;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export async function startSoakLedger(serverUrl: string | undefined): Promise<SoakLedger> {
  const own = await ownLedgerDb(serverUrl, 'wgwsoak_ledger');
  let db: LedgerDb | undefined;
  let redis: RedisClient | undefined;
  let layouts: { wallet: string; layout: ShardLayout }[] = [];
  let watching: NodeJS.Timeout | undefined;
  const { proxy, url: viaProxy } = await proxyFor(own.url).catch(async (err: unknown) => {
    await own.close();
    throw err;
  });
  const watch: OutboxWatch = { peakLength: 0, peakLagSeconds: 0, samples: 0 };
  const outboxKeys = (): string[] => layouts.flatMap(({ layout }) => layout.all.map((shard) => layout.keys(shard).ledgerOutbox()));
  const lag = async (): Promise<LedgerLag | undefined> => {
    if (redis === undefined) return undefined;
    // A Redis restart or failover holds the read: that sample is skipped.
    return Promise.race([ledgerLag(redis, outboxKeys(), Date.now()), sleep(1000).then(() => undefined)]).catch(() => undefined);
  };
  const sample = async (): Promise<void> => {
    const now = Date.now();
    const seen = await lag();
    if (seen === undefined || watch.cutAt === undefined || now < watch.cutAt) return;
    watch.samples += 1;
    if (watch.restoredAt === undefined || watch.caughtUpAt === undefined) {
      watch.peakLength = Math.max(watch.peakLength, seen.outboxLength);
      watch.peakLagSeconds = Math.max(watch.peakLagSeconds, seen.lagSeconds);
    }
    if (watch.restoredAt !== undefined && watch.caughtUpAt === undefined && seen.lagSeconds < 2) watch.caughtUpAt = now;
  };

  const drained = async (deadline: number): Promise<{ ms: number; left: LedgerLag }> => {
    const start = Date.now();
    for (;;) {
      const seen = (await lag()) ?? { outboxLength: -1, lagSeconds: 0 };
      if (seen.outboxLength === 0 || Date.now() > deadline) return { ms: Date.now() - start, left: seen };
      await sleep(250);
    }
  };

  return {
    kind: own.kind,
    viaProxy,
    watch,
    connect(env) {
      const config = loadWorkerConfig(env);
      redis = createRedis(redisTargetOf(config), { name: 'soak-ledger-check' });
      const wallets = config.registry.wallets.map((w) => w.id);
      layouts = wallets.map((wallet) => ({ wallet, layout: walletLayout(config, wallet) }));
      const tick = (): void => {
        watching = setTimeout(() => void sample().finally(() => watching !== undefined && tick()), WATCH_EVERY_MS);
      };
      tick();
    },
    async outage(seconds, at, fraction, log) {
      while (fraction() < at) await sleep(100);
      proxy.cut();
      watch.cutAt = Date.now();
      log(`ledger outage: the connection to PostgreSQL cut for ${seconds} s`);
      await sleep(seconds * 1000);
      proxy.restore();
      watch.restoredAt = Date.now();
      log('ledger outage: the connection to PostgreSQL is back');
    },
    drained,
    async snapshot(deadline) {
      db ??= openLedgerDb(own.url, { max: 2 });
      const readRedis = async (): Promise<Map<string, RecordState[]>> => {
        const records = new Map<string, RecordState[]>();
        for (const { wallet, layout } of layouts) records.set(wallet, await redisRecords(redis!, wallet, layout));
        return records;
      };
      for (let before = await readRedis(); ; ) {
        await drained(deadline);
        const changes = await everyRow(db, 'ledger_changes');
        const newest = await everyRow(db, 'ledger_transactions');
        const after = await readRedis();
        if (sameRecords(before, after) || Date.now() > deadline) {
          const out = new Map<string, WalletSnapshot>([...after].map(([wallet, records]) => [wallet, { redis: records, changes: [], newest: [] }]));
          for (const row of changes) out.get(row.wallet)?.changes.push(row);
          for (const row of newest) out.get(row.wallet)?.newest.push(row);
          return out;
        }
        before = after;
      }
    },
    async close() {
      const timer = watching;
      watching = undefined;
      clearTimeout(timer);
      if (redis !== undefined) await closeRedis(redis);
      await db?.end();
      await proxy.close();
      await own.close();
    },
  };
}

/** The same records at the same change number in both reads. */
function sameRecords(a: ReadonlyMap<string, readonly RecordState[]>, b: ReadonlyMap<string, readonly RecordState[]>): boolean {
  const numbers = (m: ReadonlyMap<string, readonly RecordState[]>): string =>
    [...m].flatMap(([wallet, records]) => records.map((r) => `${wallet} ${r.transactionId} ${r.createdAt} ${r.changeNo}`)).sort().join('\n');
  return numbers(a) === numbers(b);
}

/** Every transaction record of a wallet in Redis (each shard's time index names them all), as the outbox would carry it. */
async function redisRecords(redis: RedisClient, wallet: string, layout: ShardLayout): Promise<RecordState[]> {
  const out: RecordState[] = [];
  for (const shard of layout.all) {
    const keys = layout.keys(shard);
    for await (const ids of zsetPages(redis, keys.timeIndex(), -Infinity, Infinity, 500)) {
      for (const hash of await readRecordHashes(redis, keys, ids)) {
        const row = rowOf(wallet, shard, '0-0', ['t', 'tx', ...Object.entries(hash).flat()]);
        if (row?.type === 'change') out.push(row.row);
      }
    }
  }
  return out;
}
