--[[
  Renews the expiry of a session that still exists (never recreates an expired one) and records
  its last balance; an `ending` session has no expiry until its terminate went out.

  Input:
    KEYS[1] session

    ARGV[1] ttl (seconds)
    ARGV[2] balance ('' = leave it)

  Output: 1, or 0 when there is no such session
]]
local sessionKey = KEYS[1]
local ttlSeconds, balance = ARGV[1], ARGV[2]
if redis.call('EXISTS', sessionKey) == 0 then return 0 end
if balance ~= '' then redis.call('HSET', sessionKey, 'balance', balance) end
if redis.call('HGET', sessionKey, 'state') ~= 'ending' then redis.call('EXPIRE', sessionKey, ttlSeconds) end
return 1
