--[[
  The token's keys (its hash and its set of sessions) outlive every session on it: whatever renews
  a session's sliding expiry renews them to at least as long. Once an `end` on the token is
  outstanding (`ending`), and once its terminate was decided, they have no expiry until the
  terminate went out: the end's decision may wait for another session's expiry, and must still
  find what to send then. `renewUnlessHeld` takes the token's `state` and `ending` as the caller
  read them in the same step.
]]
local function renewUnlessHeld(tokenKey, tokenSessionsKey, ttlSeconds, state, ending)
  if state or ending then return end
  local ttl = tonumber(ttlSeconds)
  if redis.call('TTL', tokenKey) < ttl then redis.call('EXPIRE', tokenKey, ttl) end
  if redis.call('TTL', tokenSessionsKey) < ttl then redis.call('EXPIRE', tokenSessionsKey, ttl) end
end

-- The same, reading the token's `state` and `ending` itself.
local function renewToken(tokenKey, tokenSessionsKey, ttlSeconds)
  local held = redis.call('HMGET', tokenKey, 'state', 'ending')
  renewUnlessHeld(tokenKey, tokenSessionsKey, ttlSeconds, held[1], held[2])
end
