import { createHash, randomBytes } from 'node:crypto';
import type { SessionFields } from '../wallet/protocol';
import type { Keys } from './keys';
import { registerRate, takeInWindow, type Allowance, type RateWindow } from './rate';
import type { RedisClient } from './redis';
import { defineScript, registerScripts, runScript } from './scripts';
import type { ShardLayout } from './shards';
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
  /**
   * A new session on the token, unless its terminate was decided already (`token_ended`) or it
   * holds `sessionCap` sessions that still exist (`full`).
   */
  create(session: NewSession, now: number, sessionCap: number): Promise<CreateResult>;
  /** Counts a launch of the token against its rate (launches a window), before the wallet is asked. */
  takeLaunch(launch: Pick<NewSession, 'token' | 'playerId' | 'siteId'>, rate: RateWindow): Promise<Allowance>;
  get(sessionId: string): Promise<Session | undefined>;
  /**
   * The fields a session never changes (token, player, site, currency, game), from a small
   * in-process cache, else read from Redis. Says nothing about whether the session is still open
   * or still exists: whoever acts on it checks that in Redis (the claim script does).
   */
  profile(sessionId: string): Promise<SessionProfile | undefined>;
  /** Renews the sliding expiry (the session's and its token's); says the session's state, or undefined when it no longer exists. */
  touch(session: Pick<SessionProfile, 'sessionId' | 'tokenRef'>): Promise<Session['state'] | undefined>;
  /**
   * The engine's `end`: the session takes no more bets, and its token's terminate is decided if
   * nothing holds the token (contract 5.6). `terminate`: decided, and this caller holds the send lease.
   */
  end(session: Pick<SessionProfile, 'sessionId' | 'tokenRef'>, lease: TerminateLease): Promise<EndResult>;
  /** The terminate job's step before sending: the decision and the send lease, or why not. */
  takeTerminate(tokenRef: string, lease: TerminateLease): Promise<TakeTerminateResult>;
  /** How a terminate ended (see finish-terminate-4.lua). */
  finishTerminate(tokenRef: string, finish: TerminateFinish): Promise<void>;
  /** What a terminate of the token sends; undefined once the token's keys expired. */
  tokenFields(tokenRef: string): Promise<TokenFields | undefined>;
  /** Ending tokens of one shard whose check time passed (the sweeper makes sure a terminate job drives each). */
  dueEndingTokens(shard: number, now: number, limit: number): Promise<string[]>;
  /** Whether the token is in the ending index: its end was asked and its terminate is not done. */
  isEnding(tokenRef: string): Promise<boolean>;
  /** Records still pending or dead under the session's wallet token (in any session of that token). */
  pendingCount(session: Pick<Session, 'tokenRef'>): Promise<number>;
}

export type CreateResult =
  | { readonly kind: 'created'; readonly session: Session }
  | { readonly kind: 'token_ended'; readonly session?: undefined }
  | { readonly kind: 'full'; readonly session?: undefined }
  /** The wallet is being removed from the registry (registry/wallet-retire.ts): no new session. */
  | { readonly kind: 'retired'; readonly session?: undefined };

/** The fields of the spec's terminate: the token and who it was issued for. */
export interface TokenFields {
  readonly token: string;
  readonly playerId: string;
  readonly siteId: string;
  readonly currency: string;
  readonly gameId: string;
}

/**
 * A token waiting for another session: that session's own `end` takes the decision; the sweeper
 * looks this often for one that expired instead (an expired session counts as ended).
 */
export const OTHER_SESSIONS_RECHECK_MS = 60_000;

export interface TerminateLease {
  readonly now: number;
  /** Until then this caller alone may send the terminate. */
  readonly leaseUntil: number;
  /** When the sweeper may look for a terminate job behind the token. */
  readonly checkAt: number;
  /** When the sweeper looks again at a token waiting for another session to end or expire. */
  readonly sessionsCheckAt: number;
}

/**
 * `terminate`: decided, and this caller holds the send lease. `pending`: a terminate job must drive
 * it (work still holds the token, or someone else is sending). `waiting`: another session on the
 * token still plays; its own end (or the sweeper, once it expired) takes the decision.
 */
export type EndResult =
  | { readonly kind: 'not_found' }
  | { readonly kind: 'ended' | 'terminate' | 'pending' | 'waiting'; readonly balance: string };

export type TakeTerminateResult =
  | { readonly kind: 'terminated' | 'missing' }
  /** `work`: a credit or rollback of the token is pending or dead, or a debit of it is watched. */
  | { readonly kind: 'wait'; readonly for: 'work' | 'sessions' }
  | { readonly kind: 'busy'; readonly leaseUntil: number }
  /** Send attempt `attempt` (the terminate's window started at `from`). */
  | { readonly kind: 'send'; readonly attempt: number; readonly from: number };

export interface TerminateFinish {
  readonly outcome: 'terminated' | 'retry' | 'given_up';
  readonly now: number;
  readonly retentionSeconds: number;
  /** The wallet's code; null for an unknown outcome. */
  readonly walletCode: number | null;
  /** The balance the terminate answered with. */
  readonly balance?: string;
}

/**
 * 128 bits of randomness, URL-safe: a session id cannot be guessed from another. With several
 * shards it ends in `.<shard>` (ShardLayout.withShard), so an engine call finds its shard at once.
 */
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

/** `[<wallet id>~]<22 chars>[.<shard>]` (ShardLayout.withShard). */
const SESSION_ID = /^([a-z0-9-]{1,32}~)?[A-Za-z0-9_-]{22}(\.[0-9]{1,4})?$/;

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

const createScript = defineScript<{ keys: Keys; session: Session; ttlSeconds: number; cap: number; members: readonly string[] }>(
  'create-session-4',
  ({ keys, session: x, ttlSeconds, cap, members }) => ({
    keys: [keys.session(x.sessionId), keys.token(x.tokenRef), keys.tokenSessions(x.tokenRef), keys.retired()],
    moreKeys: members.map((id) => keys.session(id)),
    args: [x.sessionId, String(ttlSeconds), x.token, x.tokenRef, x.playerId, x.siteId, x.currency, x.gameId, x.balance, String(x.createdAt), String(cap), ...members],
  }),
  { listsKeys: true },
);

/** The members of a token's sessions and pending sets, as read right before a step that walks them. */
interface TokenMembers {
  readonly sessions: readonly string[];
  readonly pending: readonly string[];
}

/** The listed members' keys (the scripts' KEYS after the named ones) and ids (ARGV's tail), sessions first. */
const listedKeys = (keys: Keys, m: TokenMembers): string[] => [...m.sessions.map((id) => keys.session(id)), ...m.pending.map((id) => keys.transaction(id))];
const listedIds = (m: TokenMembers): string[] => [String(m.sessions.length), ...m.sessions, ...m.pending];

const endScript = defineScript<{ keys: Keys; sessionId: string; tokenRef: string; lease: TerminateLease; members: TokenMembers }>(
  'end-session-7',
  ({ keys, sessionId, tokenRef, lease, members }) => ({
    keys: [
      keys.session(sessionId),
      keys.token(tokenRef),
      keys.tokenSessions(tokenRef),
      keys.tokenPending(tokenRef),
      keys.endingIndex(),
      keys.terminateFailedIndex(),
      keys.tokenWatch(tokenRef),
    ],
    moreKeys: listedKeys(keys, members),
    args: [tokenRef, String(lease.now), String(lease.leaseUntil), String(lease.checkAt), String(lease.sessionsCheckAt), sessionId, ...listedIds(members)],
  }),
  { listsKeys: true },
);

const takeTerminateScript = defineScript<{ keys: Keys; tokenRef: string; lease: TerminateLease; members: TokenMembers }>(
  'take-terminate-5',
  ({ keys, tokenRef, lease, members }) => ({
    keys: [keys.token(tokenRef), keys.tokenSessions(tokenRef), keys.tokenPending(tokenRef), keys.endingIndex(), keys.tokenWatch(tokenRef)],
    moreKeys: listedKeys(keys, members),
    args: [tokenRef, String(lease.now), String(lease.leaseUntil), String(lease.checkAt), String(lease.sessionsCheckAt), ...listedIds(members)],
  }),
  { listsKeys: true },
);

const finishTerminateScript = defineScript<{ keys: Keys; tokenRef: string; finish: TerminateFinish; sessions: readonly string[] }>(
  'finish-terminate-4',
  ({ keys, tokenRef, finish, sessions }) => ({
    keys: [keys.token(tokenRef), keys.tokenSessions(tokenRef), keys.endingIndex(), keys.terminateFailedIndex()],
    moreKeys: sessions.map((id) => keys.session(id)),
    args: [
      tokenRef,
      finish.outcome,
      String(finish.retentionSeconds),
      String(finish.now),
      finish.walletCode === null ? '' : String(finish.walletCode),
      finish.balance ?? '',
      ...sessions,
    ],
  }),
  { listsKeys: true },
);

/**
 * How often a step that walks a token's sets is tried when a set changed between its read and the
 * step ('stale'): launches are rate-limited and claims on one token are few, so a second try
 * nearly always goes through.
 */
const LISTING_TRIES = 10;

const touchScript = defineScript<{ keys: Keys; session: Pick<SessionProfile, 'sessionId' | 'tokenRef'>; ttlSeconds: number }>('touch-3', ({ keys, session, ttlSeconds }) => ({
  keys: [keys.session(session.sessionId), keys.token(session.tokenRef), keys.tokenSessions(session.tokenRef)],
  args: [String(ttlSeconds)],
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

export function createSessionStore(redis: RedisClient, layout: ShardLayout, ttlSeconds: number, cacheOptions: ProfileCacheOptions = PROFILE_CACHE, clock: () => number = Date.now): SessionStore {
  registerScripts(redis, [createScript, endScript, takeTerminateScript, finishTerminateScript, touchScript]);
  registerRate(redis);
  // Insertion-ordered: the first key is the oldest, so trimming is a delete of the first.
  const profiles = new Map<string, { readonly profile: SessionProfile; readonly until: number }>();
  const remember = (session: Session): void => {
    profiles.delete(session.sessionId);
    profiles.set(session.sessionId, { profile: profileOf(session), until: clock() + cacheOptions.ttlMs });
    if (profiles.size > cacheOptions.maxEntries) profiles.delete(profiles.keys().next().value as string);
  };

  /** A session's and a token's keys: the shard their id names (a session and its token share it). */
  const keysOfId = (id: string): Keys | undefined => {
    const shard = layout.shardOfId(id);
    return shard === undefined ? undefined : layout.keys(shard);
  };
  const keysOfToken = (tokenRef: string): Keys => {
    const keys = keysOfId(tokenRef);
    if (keys === undefined) throw new Error(`token ref names no shard of this layout: ${tokenRef}`);
    return keys;
  };

  async function get(sessionId: string): Promise<Session | undefined> {
    const keys = isSessionId(sessionId) ? keysOfId(sessionId) : undefined;
    if (keys === undefined) return undefined;
    const session = fromHash(sessionId, await redis.hgetall(keys.session(sessionId)));
    if (session === undefined) profiles.delete(sessionId);
    else remember(session);
    return session;
  }

  /**
   * Runs a step that walks the token's sets with their members read just before, again while it
   * answers 'stale' (a set changed in between).
   */
  async function withMembers<T>(keys: Keys, tokenRef: string, step: (members: TokenMembers) => Promise<T | 'stale'>): Promise<T> {
    for (let i = 0; i < LISTING_TRIES; i += 1) {
      const [sessions, pending] = await Promise.all([redis.smembers(keys.tokenSessions(tokenRef)), redis.smembers(keys.tokenPending(tokenRef))]);
      const result = await step({ sessions, pending });
      if (result !== 'stale') return result;
    }
    throw new Error(`the sets of token ${tokenRef} changed under ${LISTING_TRIES} tries in a row`);
  }

  async function profile(sessionId: string): Promise<SessionProfile | undefined> {
    const cached = profiles.get(sessionId);
    if (cached !== undefined && cached.until > clock()) return cached.profile;
    const session = await get(sessionId);
    return session === undefined ? undefined : profileOf(session);
  }

  return {
    ttlSeconds,

    async create(input, now, sessionCap) {
      const shard = layout.shardOfPlayer(input.playerId, input.siteId);
      const keys = layout.keys(shard);
      const session: Session = {
        sessionId: layout.withShard(newSessionId(), shard),
        ...input,
        tokenRef: layout.withShard(tokenRefOf(input.token), shard),
        state: 'open',
        createdAt: now,
      };
      const run = (members: readonly string[]) => runScript(redis, createScript, { keys, session, ttlSeconds, cap: sessionCap, members });
      let created = await run([]);
      // Full: the members are read only now, so the script can drop those whose session expired.
      if (created === -1) created = await run(await redis.smembers(keys.tokenSessions(session.tokenRef)));
      if (created === -2) return { kind: 'retired' };
      if (created === 0) return { kind: 'token_ended' };
      if (created === -1) return { kind: 'full' };
      remember(session);
      return { kind: 'created', session };
    },

    async takeLaunch(launch, rate) {
      const shard = layout.shardOfPlayer(launch.playerId, launch.siteId);
      const tokenRef = layout.withShard(tokenRefOf(launch.token), shard);
      return takeInWindow(redis, layout.keys(shard).tokenLaunches(tokenRef), rate);
    },

    get,

    profile,

    async touch(session) {
      const state = (await runScript(redis, touchScript, { keys: keysOfToken(session.tokenRef), session, ttlSeconds })) as Session['state'] | 0;
      if (state !== 0) return state;
      profiles.delete(session.sessionId);
      return undefined;
    },

    async end({ sessionId, tokenRef }, lease) {
      const keys = keysOfToken(tokenRef);
      const [kind, balance] = await withMembers(keys, tokenRef, async (members) => {
        const answer = (await runScript(redis, endScript, { keys, sessionId, tokenRef, lease, members })) as [EndResult['kind'] | 'stale', string?];
        return answer[0] === 'stale' ? 'stale' : (answer as [EndResult['kind'], string?]);
      });
      return kind === 'not_found' ? { kind } : { kind, balance: balance ?? '0' };
    },

    async takeTerminate(tokenRef, lease): Promise<TakeTerminateResult> {
      const keys = keysOfToken(tokenRef);
      const [kind, ...values] = await withMembers(keys, tokenRef, async (members) => {
        const answer = (await runScript(redis, takeTerminateScript, { keys, tokenRef, lease, members })) as [string, ...string[]];
        return answer[0] === 'stale' ? 'stale' : answer;
      });
      switch (kind) {
        case 'busy':
          return { kind, leaseUntil: Number(values[0]) };
        case 'send':
          return { kind, attempt: Number(values[0]), from: Number(values[1]) };
        case 'wait':
          return { kind, for: values[0] === 'sessions' ? 'sessions' : 'work' };
        default:
          return { kind: kind as 'terminated' | 'missing' };
      }
    },

    async finishTerminate(tokenRef, finish) {
      const keys = keysOfToken(tokenRef);
      // Only a terminated token's sessions are walked (each is ended).
      if (finish.outcome !== 'terminated') {
        await runScript(redis, finishTerminateScript, { keys, tokenRef, finish, sessions: [] });
        return;
      }
      await withMembers(keys, tokenRef, async ({ sessions }) => ((await runScript(redis, finishTerminateScript, { keys, tokenRef, finish, sessions })) === 'stale' ? 'stale' : undefined));
    },

    async tokenFields(tokenRef) {
      const h = await redis.hgetall(keysOfToken(tokenRef).token(tokenRef));
      if (h.token === undefined) return undefined;
      return { token: h.token, playerId: h.player_id ?? '', siteId: h.site_id ?? '', currency: h.currency ?? '', gameId: h.game_id ?? '' };
    },

    async dueEndingTokens(shard, now, limit) {
      return redis.zrangebyscore(layout.keys(shard).endingIndex(), '-inf', String(now), 'LIMIT', 0, limit);
    },

    async isEnding(tokenRef) {
      return (await redis.zscore(keysOfToken(tokenRef).endingIndex(), tokenRef)) !== null;
    },

    async pendingCount(session) {
      return redis.scard(keysOfToken(session.tokenRef).tokenPending(session.tokenRef));
    },
  };
}

/** The fields every wallet call of a session carries (the spec's common request fields). */
export function walletSessionFields(session: TokenFields, providerId: string): SessionFields {
  return {
    token: session.token,
    player_id: session.playerId,
    site_id: session.siteId,
    provider_id: providerId,
    game_id: session.gameId,
    currency: session.currency,
  };
}
