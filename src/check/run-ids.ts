import { randomBytes } from 'node:crypto';
import { MAX_ID_LENGTH } from '../wallet/protocol';

/**
 * The round and transaction ids of one check run: `wc-`, the time in base 36, 48 random bits, then
 * the id's own name. Unique between runs (a wallet never sees a run's ids twice), within the
 * protocol's 36 characters, and apart from the gateway's own `gw-` compensation ids.
 */
export interface RunIds {
  readonly runId: string;
  /** `${runId}-${name}`; throws for a name that would pass the protocol's length (a bug here). */
  id(name: string): string;
}

export const RUN_ID_PREFIX = 'wc-';

export function newRunIds(now: number = Date.now()): RunIds {
  const runId = `${RUN_ID_PREFIX}${now.toString(36)}-${randomBytes(6).toString('hex')}`;
  return {
    runId,
    id(name) {
      const id = `${runId}-${name}`;
      if (id.length > MAX_ID_LENGTH) throw new RangeError(`id ${id} is longer than ${MAX_ID_LENGTH} characters`);
      return id;
    },
  };
}
