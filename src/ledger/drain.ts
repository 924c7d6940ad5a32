import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../store/redis';
import { defineScript, registerScripts, runScript } from '../store/scripts';
import type { Logger } from '../observability/logger';
import { throttledErrorLog } from '../observability/error-events';
import type { LedgerDb } from './db';
import { migrate } from './migrate';
import { dropExpiredMonths, oldestKeptMonth } from './partitions';
import { rowOf, type AuditRow, type ChangeRow } from './rows';
import { writeBatch } from './writer';

/**
 * Drains the ledger outboxes (one stream per wallet and shard) into PostgreSQL with a consumer
 * group: each worker process is a consumer. An entry is acknowledged (XACK) and deleted (XDEL)
 * only after the transaction holding its row committed, so a worker killed mid-batch leaves its
 * entries pending; another worker claims them (XAUTOCLAIM) once they sat idle for `claimIdleMs`,
 * and writes them again, which changes nothing (writes are idempotent). While PostgreSQL is down
 * nothing is acknowledged: the outbox grows, and drains in order (own pending entries first, by
 * id) once a write succeeds again. A consumer gone for long (no pending entries, idle more than
 * ten times `claimIdleMs`) is removed from the group, so the group does not collect the name of
 * every worker that ever ran; one holding entries is claimed from first, never removed.
 */

export const LEDGER_GROUP = 'ledger';

/** An outbox's entries read from a primary whose replicas did not confirm holding them. */
class NotReplicated extends Error {
  constructor(source: OutboxSource) {
    super(`ledger outbox of wallet ${source.wallet}, shard ${source.shard}: the replicas did not confirm the entries read; not written yet`);
  }
}

export interface OutboxSource {
  readonly wallet: string;
  readonly shard: number;
  readonly key: string;
  /**
   * Whether what was read from this outbox is held by REDIS_MIN_REPLICAS replicas (always true
   * with none asked). An entry is written to PostgreSQL only then: a primary that fails before
   * its replicas hold a change loses it, and the ledger must not keep a change Redis lost.
   */
  readonly replicated?: () => Promise<boolean>;
}

export interface LedgerDrainOptions {
  readonly redis: RedisClient;
  readonly db: LedgerDb;
  /**
   * The outboxes to drain, asked at each pass: a wallet a registry reload adds is drained from the
   * next pass on. One that leaves the registry stays drained (its last changes may still be in
   * its outbox).
   */
  readonly sources: () => readonly OutboxSource[];
  readonly retentionDays: number;
  readonly logger: Logger;
  /** Entries read per stream per step. Default 500. */
  readonly batch?: number;
  /** A pending entry idle this long belongs to a consumer taken for dead. Default 60 s. */
  readonly claimIdleMs?: number;
  /** A consumer without pending entries idle this long is gone, and removed. Default 10 × claimIdleMs. */
  readonly goneConsumerMs?: number;
  /** Pause when every outbox was empty. Default 200 ms. */
  readonly idleMs?: number;
  /** How often old months are dropped. Default 1 h. */
  readonly retentionEveryMs?: number;
  readonly now?: () => number;
}

export interface LedgerDrain {
  /** Resolves once the schema is current (the migrations ran); the drain itself runs in the background. */
  readonly ready: Promise<void>;
  /** One pass over every outbox (tests); returns the entries acknowledged. */
  drainOnce(): Promise<number>;
  /** Removes the gone consumers from every outbox's group now; returns their names. */
  dropGoneConsumers(): Promise<string[]>;
  /** Drops the months past the retention now; returns the partitions dropped. */
  applyRetention(): Promise<string[]>;
  close(): Promise<void>;
}

type StreamEntries = [string, string[]][];

const dropGoneScript = defineScript<{ key: string; consumer: string; idleMs: number }>('drop-gone-consumers-1', ({ key, consumer, idleMs }) => ({
  keys: [key],
  args: [LEDGER_GROUP, consumer, String(idleMs)],
}));

const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });

export function startLedgerDrain(options: LedgerDrainOptions): LedgerDrain {
  const { redis, db, logger } = options;
  const batch = options.batch ?? 500;
  const claimIdleMs = options.claimIdleMs ?? 60_000;
  const goneConsumerMs = options.goneConsumerMs ?? 10 * claimIdleMs;
  const idleMs = options.idleMs ?? 200;
  const retentionEveryMs = options.retentionEveryMs ?? 3_600_000;
  const now = options.now ?? Date.now;
  const consumer = `${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`;
  const stop = new AbortController();
  const logError = throttledErrorLog(logger, 'ledger write failed: the outbox keeps the changes until PostgreSQL takes them');
  const months = new Set<number>();
  const grouped = new Set<string>();
  let lastRetention = Number.NEGATIVE_INFINITY;
  let lastConsumerSweep = Number.NEGATIVE_INFINITY;
  const known = new Map<string, OutboxSource>();
  /** Every outbox the registry named since this drain started. */
  const sources = (): OutboxSource[] => {
    for (const source of options.sources()) known.set(source.key, source);
    return [...known.values()];
  };
  registerScripts(redis, [dropGoneScript]);

  async function ensureGroup(key: string): Promise<void> {
    if (grouped.has(key)) return;
    try {
      await redis.xgroup('CREATE', key, LEDGER_GROUP, '0', 'MKSTREAM');
    } catch (err) {
      if (!/BUSYGROUP/.test((err as Error).message)) throw err;
    }
    grouped.add(key);
  }

  /** Entries to write from one outbox: a dead consumer's first, then this consumer's own pending, then new ones. */
  async function take(source: OutboxSource): Promise<StreamEntries> {
    await ensureGroup(source.key);
    const claimed = (await redis.xautoclaim(source.key, LEDGER_GROUP, consumer, claimIdleMs, '0-0', 'COUNT', batch)) as [string, StreamEntries, string[]?];
    // Entries deleted meanwhile come back as nil fields; they were written already.
    const fromDead = claimed[1].filter((e) => e[1] !== null);
    if (fromDead.length > 0) return fromDead;
    const read = async (from: string): Promise<StreamEntries> => {
      const reply = (await redis.xreadgroup('GROUP', LEDGER_GROUP, consumer, 'COUNT', batch, 'STREAMS', source.key, from)) as [string, StreamEntries][] | null;
      return (reply?.[0]?.[1] ?? []).filter((e) => e[1] !== null);
    };
    const own = await read('0');
    return own.length > 0 ? own : read('>');
  }

  async function drainSource(source: OutboxSource): Promise<number> {
    const entries = await take(source);
    if (entries.length === 0) return 0;
    // Not confirmed: left pending, and read again (this consumer's own first) at the next pass.
    if (source.replicated !== undefined && !(await source.replicated())) throw new NotReplicated(source);
    const changes: ChangeRow[] = [];
    const audits: AuditRow[] = [];
    for (const [id, flat] of entries) {
      const row = rowOf(source.wallet, source.shard, id, flat);
      if (row?.type === 'change') changes.push(row.row);
      else if (row?.type === 'audit') audits.push(row.row);
      else logger.warn({ wallet: source.wallet, shard: source.shard, entry: id }, 'ledger outbox entry of an unknown kind: acknowledged without a row');
    }
    await writeBatch(db, changes, audits, oldestKeptMonth(now(), options.retentionDays), months);
    const ids = entries.map(([id]) => id);
    await redis.multi().xack(source.key, LEDGER_GROUP, ...ids).xdel(source.key, ...ids).exec();
    return ids.length;
  }

  async function drainOnce(): Promise<number> {
    let done = 0;
    let unconfirmed: NotReplicated | undefined;
    for (const source of sources()) {
      try {
        done += await drainSource(source);
      } catch (err) {
        // One shard's primary without its replicas does not hold back the other outboxes.
        if (!(err instanceof NotReplicated)) throw err;
        unconfirmed ??= err;
      }
    }
    if (unconfirmed !== undefined) throw unconfirmed;
    return done;
  }

  async function dropGoneConsumers(): Promise<string[]> {
    const removed: string[] = [];
    for (const source of sources()) {
      await ensureGroup(source.key);
      const names = (await runScript(redis, dropGoneScript, { key: source.key, consumer, idleMs: goneConsumerMs })) as string[];
      if (names.length > 0) logger.info({ wallet: source.wallet, shard: source.shard, consumers: names }, 'ledger outbox consumers gone for long removed from the group');
      removed.push(...names);
    }
    return removed;
  }

  async function applyRetention(): Promise<string[]> {
    const dropped = await dropExpiredMonths(db, now(), options.retentionDays);
    if (dropped.length > 0) logger.info({ dropped, retention_days: options.retentionDays }, 'ledger months past the retention dropped');
    return dropped;
  }

  async function migrateUntilDone(): Promise<void> {
    for (let wait = 1_000; !stop.signal.aborted; wait = Math.min(wait * 2, 30_000)) {
      try {
        const applied = await migrate(db);
        logger.info({ applied }, applied.length > 0 ? 'ledger migrations applied' : 'ledger schema current');
        return;
      } catch (err) {
        logError(err as Error);
        await sleep(wait, stop.signal);
      }
    }
  }

  const ready = migrateUntilDone();

  const loop = (async () => {
    await ready;
    let failures = 0;
    while (!stop.signal.aborted) {
      try {
        if (now() - lastRetention >= retentionEveryMs) {
          await applyRetention();
          lastRetention = now();
        }
        if (now() - lastConsumerSweep >= claimIdleMs) {
          await dropGoneConsumers();
          lastConsumerSweep = now();
        }
        const done = await drainOnce();
        failures = 0;
        if (done === 0) await sleep(idleMs, stop.signal);
      } catch (err) {
        logError(err as Error);
        failures += 1;
        await sleep(Math.min(250 * 2 ** Math.min(failures, 6), 10_000), stop.signal);
      }
    }
  })();

  return {
    ready,
    drainOnce,
    dropGoneConsumers,
    applyRetention,
    async close() {
      stop.abort();
      await loop;
    },
  };
}
