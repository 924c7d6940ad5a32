--[[
  The engine's `end` of a session: the session stops taking bets (`ending`), and the decision to
  terminate its wallet token is taken if nothing holds the token any more (see
  includes/terminate-decision). A token whose terminate was given up (its window passed) is driven
  again: a repeated `end` starts a new window.

  Input:
    KEYS[1] session
    KEYS[2] token
    KEYS[3] token's sessions
    KEYS[4] token's pending set
    KEYS[5] ending index
    KEYS[6] terminate-failed index
    KEYS[7] token's watched debits
    KEYS[8..] the session key of each member of the token's sessions, then the record key of each
              member of its pending set (read by the caller just before: includes/listed-keys)

    ARGV[1] token ref
    ARGV[2] now (ms)
    ARGV[3] send lease until (ms)
    ARGV[4] when the sweeper may look for a terminate job behind the token (ms)
    ARGV[5] when the sweeper looks again at a token waiting for another session to end or expire (ms;
            earlier if that session expires before)
    ARGV[6] session id
    ARGV[7] how many members of the token's sessions are listed (n)
    ARGV[8..] the listed session ids, then the listed pending record ids, in the order of KEYS[8..]

  Output:
    {'not_found'}
    {'ended', session balance}          the token was terminated already
    {'terminate', session balance}      decided; this caller holds the send lease
    {'pending', session balance}        decided and sent by someone else, or waiting for the token's work
                                        or watched debits
    {'waiting', session balance}        another session on the token still plays
    {'stale'}                           a listed set changed since it was read: nothing was written
]]
local sessionKey, tokenKey, tokenSessionsKey, tokenPendingKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local endingKey, terminateFailedKey, tokenWatchKey = KEYS[5], KEYS[6], KEYS[7]
local tokenRef, now, leaseUntil, checkAt, sessionsCheckAt = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local sessionId, listedSessions = ARGV[6], tonumber(ARGV[7])
local FIRST_LISTED_KEY, FIRST_LISTED_ARG = 8, 8

--- @include "includes/terminate-decision"
--- @include "includes/listed-keys"

local sessions = listedKeys(FIRST_LISTED_KEY, FIRST_LISTED_ARG, listedSessions)
local pending = listedKeys(FIRST_LISTED_KEY + listedSessions, FIRST_LISTED_ARG + listedSessions, #KEYS - FIRST_LISTED_KEY + 1 - listedSessions)
if not (listsWholeSet(tokenSessionsKey, sessions.members) and listsWholeSet(tokenPendingKey, pending.members)) then return {'stale'} end

local session = redis.call('HMGET', sessionKey, 'state', 'balance', 'token', 'player_id', 'site_id', 'currency', 'game_id')
local sessionState, balance = session[1], session[2] or '0'
if not sessionState then return {'not_found'} end
if sessionState == 'ended' then return {'ended', balance} end
if sessionState == 'open' then
  redis.call('HSET', sessionKey, 'state', 'ending')
  -- Kept (no expiry) while its end is outstanding.
  redis.call('PERSIST', sessionKey)
end
local tokenState = redis.call('HGET', tokenKey, 'state')
if tokenState == 'terminated' then
  redis.call('HSET', sessionKey, 'state', 'ended')
  return {'ended', balance}
end
-- What the terminate sends, from the session, in case the token's own keys expired meanwhile.
redis.call('HSET', tokenKey, 'token', session[3], 'player_id', session[4], 'site_id', session[5], 'currency', session[6], 'game_id', session[7], 'ending', 1)
redis.call('SADD', tokenSessionsKey, sessionId)
-- Kept (no expiry) while this end is outstanding: a decision that waits for another session's
-- expiry must find them after it (see includes/renew-token).
redis.call('PERSIST', tokenKey)
redis.call('PERSIST', tokenSessionsKey)
if redis.call('ZREM', terminateFailedKey, tokenRef) == 1 then
  redis.call('HSET', tokenKey, 'from', now, 'attempts', 0)
end
local decision, lookAt = takeTerminate(tokenKey, tokenSessionsKey, tokenPendingKey, tokenWatchKey, sessions, pending, now, leaseUntil, sessionsCheckAt)
if decision == 'terminate' then
  redis.call('ZADD', endingKey, checkAt, tokenRef)
  return {'terminate', balance}
end
if decision == 'wait_sessions' then
  redis.call('ZADD', endingKey, lookAt, tokenRef)
  return {'waiting', balance}
end
redis.call('ZADD', endingKey, checkAt, tokenRef)
return {'pending', balance}
