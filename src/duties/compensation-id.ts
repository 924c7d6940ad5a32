import { createHash } from 'node:crypto';
import { RESERVED_ID_PREFIX, isReservedId } from '../lib/reserved-ids';

/** Fixed namespace of the gateway's name-based ids (chosen once; never change it). */
const NAMESPACE = Buffer.from('6f1c2a7e4b9d4e0c8a35d2f1b7c9e604', 'hex');

/**
 * How many compensations one debit can have: the first, one after a watched debit shows up applied
 * late, one more each time an operator resolves a compensation as not applied.
 */
export const MAX_COMPENSATIONS = 100;

/**
 * A debit's compensation rollback id: `gw-` and 32 hex digits of a name-based hash of the debit id
 * (35 characters), the same on every retry, in every process and after any crash. `generation` 0
 * is the first compensation; each later one (a debit applied after its compensation found it
 * absent, a compensation an operator found not applied) has an id of its own, since the spec does
 * not say whether a wallet remembers a refused rollback id.
 */
export function compensationTransactionId(debitTransactionId: string, generation = 0): string {
  const name = generation === 0 ? `compensation:${debitTransactionId}` : `compensation-${generation}:${debitTransactionId}`;
  const digest = createHash('sha1').update(NAMESPACE).update(name, 'utf8').digest('hex');
  return RESERVED_ID_PREFIX + digest.slice(0, 32);
}

/**
 * The id of a debit's next compensation, after `current` (the one it names now, an engine refund
 * that stood in for it, or none). undefined past MAX_COMPENSATIONS.
 */
export function nextCompensationId(debitTransactionId: string, current: string | null): string | undefined {
  if (current === null || !isReservedId(current)) return compensationTransactionId(debitTransactionId, 0);
  for (let generation = 0; generation < MAX_COMPENSATIONS - 1; generation += 1) {
    if (compensationTransactionId(debitTransactionId, generation) === current) return compensationTransactionId(debitTransactionId, generation + 1);
  }
  return undefined;
}
