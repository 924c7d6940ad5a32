--[[
  The token's keys (its hash and its set of sessions) outlive every session on it: whatever renews
  a session's sliding expiry renews them to at least as long. A token whose terminate was decided
  has no expiry until it went out.
]]
local function renewToken(tokenKey, tokenSessionsKey, ttlSeconds)
  if redis.call('HGET', tokenKey, 'state') then return end
  local ttl = tonumber(ttlSeconds)
  if redis.call('TTL', tokenKey) < ttl then redis.call('EXPIRE', tokenKey, ttl) end
  if redis.call('TTL', tokenSessionsKey) < ttl then redis.call('EXPIRE', tokenSessionsKey, ttl) end
end
