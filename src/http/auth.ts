import { hash, timingSafeEqual } from 'node:crypto';
import type { EngineError } from '../engine';
import { codedError } from '../lib/error-codes';

// One-shot: no Hash object per request (every engine request is checked).
const digest = (text: string): Buffer => hash('sha256', text, 'buffer');

export const unauthorized = (): EngineError => codedError('UNAUTHORIZED', { message: 'missing or wrong Bearer key' });

/**
 * `Authorization: Bearer <ENGINE_API_KEY>`. Both sides are hashed first so the comparison takes the
 * same time whatever the length or content of the guess.
 */
export function bearerCheck(apiKey: string): (header: string | undefined) => boolean {
  const expected = digest(apiKey);
  return (header) => {
    const match = typeof header === 'string' ? /^Bearer +(\S+) *$/i.exec(header) : null;
    return match?.[1] !== undefined && timingSafeEqual(digest(match[1]), expected);
  };
}
