--[[
  Renews the expiry of a session that still exists (never recreates an expired one) and records
  its last balance; an `ending` session has no expiry until its terminate went out.

  Input:
    KEYS[1] session
    KEYS[2] token
    KEYS[3] token's sessions

    ARGV[1] ttl (seconds)
    ARGV[2] balance ('' = leave it)

  Output: 1, or 0 when there is no such session
]]
local sessionKey, tokenKey, tokenSessionsKey = KEYS[1], KEYS[2], KEYS[3]
local ttlSeconds, balance = ARGV[1], ARGV[2]

--- @include "includes/renew-token"

if redis.call('EXISTS', sessionKey) == 0 then return 0 end
if balance ~= '' then redis.call('HSET', sessionKey, 'balance', balance) end
if redis.call('HGET', sessionKey, 'state') == 'open' then
  redis.call('EXPIRE', sessionKey, ttlSeconds)
  renewToken(tokenKey, tokenSessionsKey, ttlSeconds)
end
return 1
