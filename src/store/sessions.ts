import { createHash, randomBytes } from 'node:crypto';
import type Redis from 'ioredis';
import type { Keys } from './keys';
import type { Session } from './types';

export interface NewSession {
  token: string;
  playerId: string;
  siteId: string;
  currency: string;
  gameId: string;
  balance: string;
}

export interface SessionStore {
  create(session: NewSession, now: number): Promise<Session>;
  get(sessionId: string): Promise<Session | undefined>;
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

// Moves open → ending, and keeps the session (no expiry) while its end is outstanding.
const BEGIN_END = `
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return false end
if state == 'open' then
  redis.call('HSET', KEYS[1], 'state', 'ending')
  redis.call('PERSIST', KEYS[1])
end
return state
`;

// Renews the expiry of a session that still exists (never recreates an expired one); an `ending`
// session has no expiry until its terminate went out.
const TOUCH = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[2] ~= '' then redis.call('HSET', KEYS[1], 'balance', ARGV[2]) end
if redis.call('HGET', KEYS[1], 'state') ~= 'ending' then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return 1
`;

export function createSessionStore(redis: Redis, keys: Keys, ttlSeconds: number): SessionStore {
  return {
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
      return session;
    },

    async get(sessionId) {
      if (!isSessionId(sessionId)) return undefined;
      return fromHash(sessionId, await redis.hgetall(keys.session(sessionId)));
    },

    async touch(sessionId, balance) {
      await redis.eval(TOUCH, 1, keys.session(sessionId), String(ttlSeconds), balance ?? '');
    },

    async beginEnd(sessionId) {
      const state = (await redis.eval(BEGIN_END, 1, keys.session(sessionId))) as Session['state'] | null;
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
