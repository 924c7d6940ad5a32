import Redis, { type Cluster } from 'ioredis';
import { withDeadline } from '../lib/deadline';
import type { RedisClient } from './redis';
import type { ShardLayout } from './shards';

/**
 * Durable acknowledgements (contract 9): before the engine is answered, the writes the answer
 * relies on are acknowledged by REDIS_MIN_REPLICAS replicas within REDIS_WAIT_MS. Redis `WAIT`
 * covers what one connection wrote, so it is sent on every connection that writes an answer's
 * state (the store's and BullMQ's). Replication is one ordered stream: a replica that acknowledged
 * an offset holds every write before it, whichever connection made it. On a cluster the WAIT goes
 * to the master that owns the answer's shard, on the connection ioredis keeps to that master (the
 * one the writes went through): "the same, per shard".
 */
export interface Durability {
  /** The writes this process made so far in `shard` reached the replicas in time (true), or not (false). */
  confirm(shard: number): Promise<boolean>;
  /** Only what the store's own connection (the first) wrote in `shard`: a claim, before its wallet call. */
  confirmStore(shard: number): Promise<boolean>;
  /**
   * What this process read in `shard` (a stored record another process may have written) reached
   * the replicas: a marker write first, so the WAIT after it covers everything written before.
   */
  confirmRead(shard: number): Promise<boolean>;
}

/** REDIS_MIN_REPLICAS=0: nothing to wait for, nothing sent. */
export const PRIMARY_ONLY: Durability = Object.freeze({
  confirm: () => Promise.resolve(true),
  confirmStore: () => Promise.resolve(true),
  confirmRead: () => Promise.resolve(true),
});

export interface ReplicaDurabilityOptions {
  /** Every connection that writes an answer's state; the first (the store's) also writes the read marker. */
  readonly connections: readonly [RedisClient, ...RedisClient[]];
  readonly minReplicas: number;
  readonly waitMs: number;
  /** The shards: their read markers (under QUEUE_PREFIX) and, on a cluster, their slots. */
  readonly layout: ShardLayout;
}

/**
 * A connection that is away (a failover under way) does not answer WAIT at all: past the wait
 * and this margin the answer is "not durable" rather than a request held open.
 */
const ANSWER_MARGIN_MS = 1_000;

/**
 * One WAIT per node connection per tick: the callers of one tick already saw their writes
 * answered, so a WAIT sent after all of them covers each (under load, one WAIT serves many answers).
 */
function sharedWait(redis: Redis, minReplicas: number, waitMs: number): () => Promise<boolean> {
  let next: Promise<boolean> | undefined;
  return () => {
    next ??= Promise.resolve().then(() => {
      next = undefined;
      return withDeadline(redis.wait(minReplicas, waitMs), waitMs + ANSWER_MARGIN_MS, 'WAIT').then(
        (acknowledged) => acknowledged >= minReplicas,
        () => false,
      );
    });
    return next;
  };
}

/** The connection a cluster client keeps to the master that owns `slot` now; undefined while no master is known. */
function masterOf(cluster: Cluster, slot: number): Redis | undefined {
  const owner = cluster.slots[slot]?.[0];
  if (owner === undefined) return undefined;
  return cluster.nodes('master').find((node) => `${node.options.host}:${node.options.port}` === owner);
}

export function replicaDurability(options: ReplicaDurabilityOptions): Durability {
  const { connections, minReplicas, waitMs, layout } = options;
  // Node connections come and go with failovers: their shared WAITs are kept per connection object.
  const waits = new WeakMap<Redis, () => Promise<boolean>>();
  const waitOn = (connection: RedisClient, shard: number): Promise<boolean> => {
    const node = connection instanceof Redis ? connection : masterOf(connection, layout.slot(shard));
    if (node === undefined) return Promise.resolve(false);
    let wait = waits.get(node);
    if (wait === undefined) {
      wait = sharedWait(node, minReplicas, waitMs);
      waits.set(node, wait);
    }
    return wait();
  };
  const confirm = async (shard: number): Promise<boolean> => (await Promise.all(connections.map((c) => waitOn(c, shard)))).every(Boolean);
  return {
    confirm,
    confirmStore: (shard) => waitOn(connections[0], shard),
    async confirmRead(shard) {
      try {
        await withDeadline(connections[0].incr(layout.keys(shard).durabilityMarker()), waitMs + ANSWER_MARGIN_MS, 'durability marker');
      } catch {
        return false;
      }
      return waitOn(connections[0], shard);
    },
  };
}

export interface DurabilitySettings {
  readonly REDIS_MIN_REPLICAS: number;
  readonly REDIS_WAIT_MS: number;
}

/** PRIMARY_ONLY with REDIS_MIN_REPLICAS=0 (the one-Redis default costs nothing), else WAIT. */
export function durabilityFor(settings: DurabilitySettings, connections: readonly [RedisClient, ...RedisClient[]], layout: ShardLayout): Durability {
  if (settings.REDIS_MIN_REPLICAS === 0) return PRIMARY_ONLY;
  return replicaDurability({ connections, minReplicas: settings.REDIS_MIN_REPLICAS, waitMs: settings.REDIS_WAIT_MS, layout });
}
