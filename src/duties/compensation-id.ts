import { createHash } from 'node:crypto';

/** Fixed namespace of the gateway's name-based ids (a v4 UUID chosen once; never change it). */
const NAMESPACE = Buffer.from('6f1c2a7e4b9d4e0c8a35d2f1b7c9e604', 'hex');

/**
 * The compensation rollback's transaction id for a debit: a name-based (v5) UUID of the debit id,
 * 36 characters, the same on every retry, in every process and after any crash. `late`: the second
 * compensation of a debit the wallet applied after its first compensation found it absent; it has
 * an id of its own, since the spec does not say whether a wallet remembers a refused rollback id.
 */
export function compensationTransactionId(debitTransactionId: string, which: 'first' | 'late' = 'first'): string {
  const name = which === 'first' ? `compensation:${debitTransactionId}` : `late-compensation:${debitTransactionId}`;
  const hash = createHash('sha1').update(NAMESPACE).update(name, 'utf8').digest();
  const bytes = hash.subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x50;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
