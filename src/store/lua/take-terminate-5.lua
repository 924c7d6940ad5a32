--[[
  The terminate job's step before it sends: takes the decision (see includes/terminate-decision)
  and the send lease, or says why not.

  Input:
    KEYS[1] token
    KEYS[2] token's sessions
    KEYS[3] token's pending set
    KEYS[4] ending index
    KEYS[5] token's watched debits
    KEYS[6..] the session key of each member of the token's sessions, then the record key of each
              member of its pending set (read by the caller just before: includes/listed-keys)

    ARGV[1] token ref
    ARGV[2] now (ms)
    ARGV[3] send lease until (ms)
    ARGV[4] when the sweeper may look for a terminate job behind the token (ms)
    ARGV[5] when the sweeper looks again at a token waiting for another session to end or expire (ms;
            earlier if that session expires before)
    ARGV[6] how many members of the token's sessions are listed (n)
    ARGV[7..] the listed session ids, then the listed pending record ids, in the order of KEYS[6..]

  Output:
    {'terminated'}                  nothing left to do
    {'missing'}                     no such token
    {'wait', 'work' | 'sessions'}   work (or a watched debit) still holds the token, or another
                                    session still plays
    {'busy', lease until}           another sender holds the lease
    {'send', attempt, from}         this caller sends attempt n (the window started at `from`)
    {'stale'}                       a listed set changed since it was read: nothing was written
]]
local tokenKey, tokenSessionsKey, tokenPendingKey, endingKey, tokenWatchKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local tokenRef, now, leaseUntil, checkAt, sessionsCheckAt = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local listedSessions = tonumber(ARGV[6])
local FIRST_LISTED_KEY, FIRST_LISTED_ARG = 6, 7

--- @include "includes/terminate-decision"
--- @include "includes/listed-keys"

local sessions = listedKeys(FIRST_LISTED_KEY, FIRST_LISTED_ARG, listedSessions)
local pending = listedKeys(FIRST_LISTED_KEY + listedSessions, FIRST_LISTED_ARG + listedSessions, #KEYS - FIRST_LISTED_KEY + 1 - listedSessions)
if not (listsWholeSet(tokenSessionsKey, sessions.members) and listsWholeSet(tokenPendingKey, pending.members)) then return {'stale'} end

if redis.call('EXISTS', tokenKey) == 0 then return {'missing'} end
if redis.call('HGET', tokenKey, 'state') == 'terminated' then
  redis.call('ZREM', endingKey, tokenRef)
  return {'terminated'}
end
redis.call('ZADD', endingKey, checkAt, tokenRef)
local decision, lookAt = takeTerminate(tokenKey, tokenSessionsKey, tokenPendingKey, tokenWatchKey, sessions, pending, now, leaseUntil, sessionsCheckAt)
if decision == 'busy' then return {'busy', redis.call('HGET', tokenKey, 'lease')} end
if decision == 'wait_work' then return {'wait', 'work'} end
if decision == 'wait_sessions' then
  redis.call('ZADD', endingKey, lookAt, tokenRef)
  return {'wait', 'sessions'}
end
local t = redis.call('HMGET', tokenKey, 'attempts', 'from')
return {'send', t[1], t[2]}
