import { hash } from 'node:crypto';
import type { EngineError } from '../engine';
import { codedError } from '../lib/error-codes';

// One-shot: no Hash object per request (every engine request is checked).
const digest = (text: string): string => hash('sha256', text, 'base64');

export const unauthorized = (): EngineError => codedError('UNAUTHORIZED', { message: 'missing or wrong Bearer key' });

/**
 * Whose key a Bearer header carries (a registry engine's: keys are unique across engines). The
 * guess is hashed and looked up by its digest, so the time is the same for any number of keys and
 * tells nothing of a key: what a lookup's time could leak is a SHA-256 digest, not the key.
 */
export function bearerOwner<T extends { readonly keys: readonly string[] }>(owners: readonly T[]): (header: string | undefined) => T | undefined {
  const byDigest = new Map<string, T>();
  for (const owner of owners) for (const key of owner.keys) byDigest.set(digest(key), owner);
  return (header) => {
    const match = typeof header === 'string' ? /^Bearer +(\S+) *$/i.exec(header) : null;
    return match?.[1] === undefined ? undefined : byDigest.get(digest(match[1]));
  };
}
