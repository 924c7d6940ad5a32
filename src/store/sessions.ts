import { createHash, randomBytes } from 'node:crypto';
import type Redis from 'ioredis';
import type { SessionFields } from '../wallet/protocol';
import type { Keys } from './keys';
import { defineScript, runScript } from './scripts';
import type { Session, SessionProfile } from './types';

export interface NewSession {
  token: string;
  playerId: string;
  siteId: string;
  currency: string;
  gameId: string;
  balance: string;
}

export interface SessionStore {
  /** The sliding expiry every engine call renews (a claim renews it in its own script). */
  readonly ttlSeconds: number;
  create(session: NewSession, now: number): Promise<Session>;
  get(sessionId: string): Promise<Session | undefined>;
  /**
   * The fields a session never changes (token, player, site, currency, game), from a small
   * in-process cache, else read from Redis. Says nothing about whether the session is still open
   * or still exists: whoever acts on it checks that in Redis (the claim script does).
   */
  profile(sessionId: string): Promise<SessionProfile | undefined>;
  /** Renews the sliding expiry and records the last known balance. */
  touch(sessionId: string, balance?: string): Promise<void>;
  /** Moves an open session to `ending`; returns the state it had (undefined: no such session). */
  beginEnd(sessionId: string): Promise<Session['state'] | undefined>;
  markEnded(sessionId: string, balance?: string): Promise<void>;
  /** Records still pending under the session's wallet token (in any session of that token). */
  pendingCount(session: Pick<Session, 'tokenRef'>): Promise<number>;
}

/** 128 bits of randomness, URL-safe: a session id cannot be guessed from another. */
export function newSessionId(): string {
  return randomBytes(16).toString('base64url');
}

/**
 * Names a wallet token in Redis keys without writing the token there: a relaunch with the same
 * token gives a new session, and both share the token's pending set.
 */
export function tokenRefOf(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('base64url').slice(0, 22);
}

const SESSION_ID = /^[A-Za-z0-9_-]{22}$/;

export function isSessionId(value: string): boolean {
  return SESSION_ID.test(value);
}

function fromHash(sessionId: string, h: Record<string, string>): Session | undefined {
  if (h.token === undefined) return undefined;
  return {
    sessionId,
    token: h.token,
    tokenRef: h.token_ref ?? tokenRefOf(h.token),
    playerId: h.player_id ?? '',
    siteId: h.site_id ?? '',
    currency: h.currency ?? '',
    gameId: h.game_id ?? '',
    balance: h.balance ?? '0',
    state: (h.state as Session['state'] | undefined) ?? 'open',
    createdAt: Number(h.created_at ?? 0),
  };
}

const beginEndScript = defineScript<{ sessionKey: string }>('begin-end-1', ({ sessionKey }) => ({ keys: [sessionKey], args: [] }));

const touchScript = defineScript<{ sessionKey: string; ttlSeconds: number; balance?: string }>('touch-1', ({ sessionKey, ttlSeconds, balance }) => ({
  keys: [sessionKey],
  args: [String(ttlSeconds), balance ?? ''],
}));

export interface ProfileCacheOptions {
  /** Sessions kept at most (the oldest entry goes first). */
  readonly maxEntries: number;
  /** How long one entry is used before Redis is read again. */
  readonly ttlMs: number;
}

/** ~300 bytes an entry: at most a few MB per process, whatever the number of live sessions. */
export const PROFILE_CACHE: ProfileCacheOptions = Object.freeze({ maxEntries: 10_000, ttlMs: 60_000 });

function profileOf(s: Session): SessionProfile {
  return { sessionId: s.sessionId, token: s.token, tokenRef: s.tokenRef, playerId: s.playerId, siteId: s.siteId, currency: s.currency, gameId: s.gameId, createdAt: s.createdAt };
}

export function createSessionStore(redis: Redis, keys: Keys, ttlSeconds: number, cacheOptions: ProfileCacheOptions = PROFILE_CACHE, clock: () => number = Date.now): SessionStore {
  // Insertion-ordered: the first key is the oldest, so trimming is a delete of the first.
  const profiles = new Map<string, { readonly profile: SessionProfile; readonly until: number }>();
  const remember = (session: Session): void => {
    profiles.delete(session.sessionId);
    profiles.set(session.sessionId, { profile: profileOf(session), until: clock() + cacheOptions.ttlMs });
    if (profiles.size > cacheOptions.maxEntries) profiles.delete(profiles.keys().next().value as string);
  };

  async function get(sessionId: string): Promise<Session | undefined> {
    if (!isSessionId(sessionId)) return undefined;
    const session = fromHash(sessionId, await redis.hgetall(keys.session(sessionId)));
    if (session === undefined) profiles.delete(sessionId);
    else remember(session);
    return session;
  }

  return {
    ttlSeconds,

    async create(input, now) {
      const session: Session = { sessionId: newSessionId(), ...input, tokenRef: tokenRefOf(input.token), state: 'open', createdAt: now };
      const key = keys.session(session.sessionId);
      await redis
        .multi()
        .hset(key, {
          token: session.token,
          token_ref: session.tokenRef,
          player_id: session.playerId,
          site_id: session.siteId,
          currency: session.currency,
          game_id: session.gameId,
          balance: session.balance,
          state: session.state,
          created_at: String(now),
        })
        .expire(key, ttlSeconds)
        .exec();
      remember(session);
      return session;
    },

    get,

    async profile(sessionId) {
      const cached = profiles.get(sessionId);
      if (cached !== undefined && cached.until > clock()) return cached.profile;
      const session = await get(sessionId);
      return session === undefined ? undefined : profileOf(session);
    },

    async touch(sessionId, balance) {
      await runScript(redis, touchScript, { sessionKey: keys.session(sessionId), ttlSeconds, balance });
    },

    async beginEnd(sessionId) {
      const state = (await runScript(redis, beginEndScript, { sessionKey: keys.session(sessionId) })) as Session['state'] | null;
      return state ?? undefined;
    },

    async markEnded(sessionId, balance) {
      const key = keys.session(sessionId);
      const tx = redis.multi().hset(key, 'state', 'ended');
      if (balance !== undefined) tx.hset(key, 'balance', balance);
      await tx.expire(key, ttlSeconds).exec();
    },

    async pendingCount(session) {
      return redis.scard(keys.tokenPending(session.tokenRef));
    },
  };
}

/** The fields every wallet call of a session carries (the spec's common request fields). */
export function walletSessionFields(session: SessionProfile, providerId: string): SessionFields {
  return {
    token: session.token,
    player_id: session.playerId,
    site_id: session.siteId,
    provider_id: providerId,
    game_id: session.gameId,
    currency: session.currency,
  };
}
