import { hash, timingSafeEqual } from 'node:crypto';
import type { EngineError } from '../engine';
import { codedError } from '../lib/error-codes';

// One-shot: no Hash object per request (every engine request is checked).
const digest = (text: string): Buffer => hash('sha256', text, 'buffer');

export const unauthorized = (): EngineError => codedError('UNAUTHORIZED', { message: 'missing or wrong Bearer key' });

/**
 * `Authorization: Bearer <key>`, any of the engine keys (two during a rotation). Both sides are
 * hashed first, and the guess is compared with every key, so the check takes the same time
 * whatever the length or content of the guess, and whichever key it matches.
 */
export function bearerCheck(apiKeys: readonly string[]): (header: string | undefined) => boolean {
  const owner = bearerOwner([{ keys: apiKeys }]);
  return (header) => owner(header) !== undefined;
}

/**
 * Whose key a Bearer header carries (a registry engine's: keys are unique across engines), checked
 * the same way: every key of every owner is compared, so the time tells neither which key nor
 * which owner matched.
 */
export function bearerOwner<T extends { readonly keys: readonly string[] }>(owners: readonly T[]): (header: string | undefined) => T | undefined {
  const expected = owners.flatMap((owner) => owner.keys.map((key) => ({ owner, digest: digest(key) })));
  return (header) => {
    const match = typeof header === 'string' ? /^Bearer +(\S+) *$/i.exec(header) : null;
    if (match?.[1] === undefined) return undefined;
    const guess = digest(match[1]);
    let found: T | undefined;
    for (const key of expected) if (timingSafeEqual(guess, key.digest)) found = key.owner;
    return found;
  };
}
