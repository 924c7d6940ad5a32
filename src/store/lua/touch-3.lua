--[[
  Renews the expiry of a session that still exists (never recreates an expired one) and says its
  state; an `ending` session has no expiry until its terminate went out.

  Input:
    KEYS[1] session
    KEYS[2] token
    KEYS[3] token's sessions

    ARGV[1] ttl (seconds)

  Output: the session's state, or 0 when there is no such session
]]
local sessionKey, tokenKey, tokenSessionsKey = KEYS[1], KEYS[2], KEYS[3]
local ttlSeconds = ARGV[1]

--- @include "includes/renew-token"

if redis.call('EXISTS', sessionKey) == 0 then return 0 end
local state = redis.call('HGET', sessionKey, 'state')
if state == 'open' then
  redis.call('EXPIRE', sessionKey, ttlSeconds)
  renewToken(tokenKey, tokenSessionsKey, ttlSeconds)
end
return state or 'open'
