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
  const expected = apiKeys.map(digest);
  return (header) => {
    const match = typeof header === 'string' ? /^Bearer +(\S+) *$/i.exec(header) : null;
    if (match?.[1] === undefined) return false;
    const guess = digest(match[1]);
    let found = false;
    for (const key of expected) found = timingSafeEqual(guess, key) || found;
    return found;
  };
}
