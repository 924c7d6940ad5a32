import type Redis from 'ioredis';
import { withDeadline } from '../lib/deadline';

/**
 * Durable acknowledgements (contract 9): before the engine is answered, the writes the answer
 * relies on are acknowledged by REDIS_MIN_REPLICAS replicas within REDIS_WAIT_MS. Redis `WAIT`
 * covers what one connection wrote, so it is sent on every connection that writes an answer's
 * state (the store's and BullMQ's). Replication is one ordered stream: a replica that acknowledged
 * an offset holds every write before it, whichever connection made it.
 */
export interface Durability {
  /** The writes this process made so far reached the replicas in time (true), or not (false). */
  confirm(): Promise<boolean>;
  /**
   * What this process read (a stored record another process may have written) reached the
   * replicas: a marker write first, so the WAIT after it covers everything written before.
   */
  confirmRead(): Promise<boolean>;
}

/** REDIS_MIN_REPLICAS=0: nothing to wait for, nothing sent. */
export const PRIMARY_ONLY: Durability = Object.freeze({
  confirm: () => Promise.resolve(true),
  confirmRead: () => Promise.resolve(true),
});

export interface ReplicaDurabilityOptions {
  /** Every connection that writes an answer's state; the first one also writes the read marker. */
  readonly connections: readonly [Redis, ...Redis[]];
  readonly minReplicas: number;
  readonly waitMs: number;
  /** A key the read marker is written to (under QUEUE_PREFIX). */
  readonly markerKey: string;
}

/**
 * A connection that is away (a failover under way) does not answer WAIT at all: past the wait
 * and this margin the answer is "not durable" rather than a request held open.
 */
const ANSWER_MARGIN_MS = 1_000;

/**
 * One WAIT per connection per tick: the callers of one tick already saw their writes answered, so
 * a WAIT sent after all of them covers each (under load, one WAIT serves many answers).
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

export function replicaDurability(options: ReplicaDurabilityOptions): Durability {
  const { connections, minReplicas, waitMs, markerKey } = options;
  const waits = connections.map((redis) => sharedWait(redis, minReplicas, waitMs));
  const confirm = async (): Promise<boolean> => (await Promise.all(waits.map((wait) => wait()))).every(Boolean);
  return {
    confirm,
    async confirmRead() {
      try {
        await withDeadline(connections[0].incr(markerKey), waitMs + ANSWER_MARGIN_MS, 'durability marker');
      } catch {
        return false;
      }
      return waits[0]!();
    },
  };
}

export interface DurabilitySettings {
  readonly REDIS_MIN_REPLICAS: number;
  readonly REDIS_WAIT_MS: number;
}

/** PRIMARY_ONLY with REDIS_MIN_REPLICAS=0 (the one-Redis default costs nothing), else WAIT. */
export function durabilityFor(settings: DurabilitySettings, connections: readonly [Redis, ...Redis[]], markerKey: string): Durability {
  if (settings.REDIS_MIN_REPLICAS === 0) return PRIMARY_ONLY;
  return replicaDurability({ connections, minReplicas: settings.REDIS_MIN_REPLICAS, waitMs: settings.REDIS_WAIT_MS, markerKey });
}
