import { Pool } from 'undici';
import { DEFAULT_TOKEN_SESSION_CAP } from '../../src/config/env';
import { createSessionStore, tokenRefOf, type NewSession } from '../../src/store/sessions';
import type { RedisClient } from '../../src/store/redis';
import { newPlayerId, startHarness, uniqueId, type Harness } from '../support/gateway-harness';

/**
 * One launch URL replayed by an outsider (10,000 times): what the token's Redis steps walk stays
 * bounded by TOKEN_SESSION_CAP however often it is replayed, and launches beyond
 * TOKEN_LAUNCHES_PER_MINUTE are refused before the wallet is asked. Bounded steps are what keep
 * Redis answering other clients quickly; the latency itself is measured by
 * `npx tsx bench/launch-flood.ts` (no timed assertions here).
 */
const REPLAYS = 10_000;
const LAUNCHES_PER_MINUTE = 30;
/** The named keys of end-session-7.lua; the rest it is passed are the token's listed sessions and pending records. */
const END_NAMED_KEYS = 7;

let h: Harness;

beforeAll(async () => {
  h = await startHarness({ label: 'launch-flood', env: { TOKEN_LAUNCHES_PER_MINUTE: String(LAUNCHES_PER_MINUTE), LOG_LEVEL: 'warn' } });
});

afterAll(async () => {
  await h?.close();
});

const newSession = (token: string, playerId: string): NewSession => ({ token, playerId, siteId: '7', currency: 'EUR', gameId: 'slot-1', balance: '100.00' });
const tokenSessionsOf = (token: string): string => h.keys.tokenSessions(tokenRefOf(token));

/** A client connection whose store-script calls are recorded (the arguments: key count, keys, ARGV). */
function recorded(redis: RedisClient): { client: RedisClient; scriptCalls: string[][] } {
  const scriptCalls: string[][] = [];
  const client = new Proxy(redis, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      const bound = (value as (...a: unknown[]) => unknown).bind(target);
      // The store registers its scripts as commands named wgw_…
      if (typeof prop === 'string' && prop.startsWith('wgw_')) return (...args: string[]) => (scriptCalls.push(args), bound(...args));
      return bound;
    },
  });
  return { client, scriptCalls };
}

describe('one launch URL replayed 10,000 times', () => {
  it(`launches ${LAUNCHES_PER_MINUTE} sessions; every other replay is a 429 with Retry-After and no wallet call`, async () => {
    const token = uniqueId('flood');
    const path = `/launch?token=${token}&player_id=${newPlayerId()}&site_id=7&currency=EUR&game_id=slot-1`;
    h.sim.clearCalls();
    const pool = new Pool(h.url, { connections: 32 });
    const statuses = new Map<number, number>();
    let retryAfterMissing = 0;
    let next = 0;
    try {
      await Promise.all(
        Array.from({ length: 32 }, async () => {
          while (next < REPLAYS) {
            next += 1;
            const res = await pool.request({ method: 'GET', path, headers: { accept: 'application/json' } });
            await res.body.dump();
            statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
            if (res.statusCode === 429 && res.headers['retry-after'] === undefined) retryAfterMissing += 1;
          }
        }),
      );
    } finally {
      await pool.close();
    }
    expect(Object.fromEntries(statuses)).toEqual({ 200: LAUNCHES_PER_MINUTE, 429: REPLAYS - LAUNCHES_PER_MINUTE });
    expect(retryAfterMissing).toBe(0);
    expect(h.sim.walletCalls().filter((c) => c.operation === 'authenticate')).toHaveLength(LAUNCHES_PER_MINUTE);
    expect(await h.redis.scard(tokenSessionsOf(token))).toBe(LAUNCHES_PER_MINUTE);
  });

  it('holds at most TOKEN_SESSION_CAP sessions on a token; an expired one makes room again', async () => {
    const token = uniqueId('capped');
    const playerId = newPlayerId();
    const kinds = new Map<string, number>();
    const created: string[] = [];
    // In batches: the replays of a flood arrive together.
    for (let done = 0; done < REPLAYS; done += 500) {
      const batch = await Promise.all(Array.from({ length: 500 }, () => h.sessions.create(newSession(token, playerId), Date.now(), DEFAULT_TOKEN_SESSION_CAP)));
      for (const r of batch) {
        kinds.set(r.kind, (kinds.get(r.kind) ?? 0) + 1);
        if (r.session) created.push(r.session.sessionId);
      }
    }
    expect(Object.fromEntries(kinds)).toEqual({ created: DEFAULT_TOKEN_SESSION_CAP, full: REPLAYS - DEFAULT_TOKEN_SESSION_CAP });
    expect(await h.redis.scard(tokenSessionsOf(token))).toBe(DEFAULT_TOKEN_SESSION_CAP);

    // Ten sessions expire: the next launches drop them from the set and take their places.
    await h.redis.del(...created.slice(0, 10).map((id) => h.keys.session(id)));
    const again = await Promise.all(Array.from({ length: 12 }, () => h.sessions.create(newSession(token, playerId), Date.now(), DEFAULT_TOKEN_SESSION_CAP)));
    expect(again.filter((r) => r.kind === 'created')).toHaveLength(10);
    expect(await h.redis.scard(tokenSessionsOf(token))).toBe(DEFAULT_TOKEN_SESSION_CAP);
  });

  it("an end on a full token is one step over at most the token's capped sessions, and still waits for every open one", async () => {
    const token = uniqueId('full-end');
    const playerId = newPlayerId();
    const sessions = await Promise.all(Array.from({ length: DEFAULT_TOKEN_SESSION_CAP }, () => h.sessions.create(newSession(token, playerId), Date.now(), DEFAULT_TOKEN_SESSION_CAP)));
    expect(sessions.every((r) => r.kind === 'created')).toBe(true);
    const { client, scriptCalls } = recorded(h.redis);
    const store = createSessionStore(client, h.layout, 3600);
    const now = Date.now();
    const lease = { now, leaseUntil: now + 1000, checkAt: now + 2000, sessionsCheckAt: now + 60_000 };
    const first = sessions[0]!.session!;
    expect(await store.end(first, lease)).toMatchObject({ kind: 'waiting' });
    expect(await store.takeTerminate(first.tokenRef, lease)).toEqual({ kind: 'wait', for: 'sessions' });
    // Each step is given the token's listed sessions as keys (its first argument counts them all), and touches no other.
    const keyCounts = scriptCalls.map((args) => Number(args[0]));
    expect(keyCounts).toHaveLength(2);
    for (const count of keyCounts) expect(count).toBeLessThanOrEqual(END_NAMED_KEYS + DEFAULT_TOKEN_SESSION_CAP);

    // The other sessions end (or expire): the last end decides the terminate.
    for (const r of sessions.slice(1, -1)) expect((await store.end(r.session!, lease)).kind).toBe('waiting');
    expect((await store.end(sessions.at(-1)!.session!, lease)).kind).toBe('terminate');
  });
});
