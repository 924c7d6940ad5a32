--[[
  The terminate job's step before it sends: takes the decision (see includes/terminate-decision)
  and the send lease, or says why not.

  Input:
    KEYS[1] token
    KEYS[2] token's sessions
    KEYS[3] token's pending set
    KEYS[4] ending index
    KEYS[5] token's watched debits

    ARGV[1] token ref
    ARGV[2] session key prefix
    ARGV[3] now (ms)
    ARGV[4] send lease until (ms)
    ARGV[5] when the sweeper may look for a terminate job behind the token (ms)
    ARGV[6] when the sweeper looks again at a token waiting for another session to end or expire (ms;
            earlier if that session expires before)
    ARGV[7] transaction key prefix (a record holding the token is this + its id)

  Output:
    {'terminated'}                  nothing left to do
    {'missing'}                     no such token
    {'wait', 'work' | 'sessions'}   work (or a watched debit) still holds the token, or another
                                    session still plays
    {'busy', lease until}           another sender holds the lease
    {'send', attempt, from}         this caller sends attempt n (the window started at `from`)
]]
local tokenKey, tokenSessionsKey, tokenPendingKey, endingKey, tokenWatchKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local tokenRef, sessionPrefix, now, leaseUntil, checkAt, sessionsCheckAt = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local txPrefix = ARGV[7]

--- @include "includes/terminate-decision"

if redis.call('EXISTS', tokenKey) == 0 then return {'missing'} end
if redis.call('HGET', tokenKey, 'state') == 'terminated' then
  redis.call('ZREM', endingKey, tokenRef)
  return {'terminated'}
end
redis.call('ZADD', endingKey, checkAt, tokenRef)
local decision, lookAt = takeTerminate(tokenKey, tokenSessionsKey, tokenPendingKey, tokenWatchKey, sessionPrefix, txPrefix, now, leaseUntil, sessionsCheckAt)
if decision == 'busy' then return {'busy', redis.call('HGET', tokenKey, 'lease')} end
if decision == 'wait_work' then return {'wait', 'work'} end
if decision == 'wait_sessions' then
  redis.call('ZADD', endingKey, lookAt, tokenRef)
  return {'wait', 'sessions'}
end
local t = redis.call('HMGET', tokenKey, 'attempts', 'from')
return {'send', t[1], t[2]}
