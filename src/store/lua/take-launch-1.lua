--[[
  Counts a launch of a wallet token against its rate (TOKEN_LAUNCHES_PER_MINUTE), before the wallet
  is asked: a replayed launch URL costs the wallet and Redis at most this many launches a minute.
  A fixed window that starts with the window's first launch; refused launches count too.

  Input:
    KEYS[1] the token's launch count

    ARGV[1] launches allowed in a window
    ARGV[2] the window (ms)

  Output: {1, 0} allowed, or {0, ms until the window ends}
]]
local launchesKey = KEYS[1]
local limit, windowMs = tonumber(ARGV[1]), ARGV[2]

local count = redis.call('INCR', launchesKey)
-- A key left without an expiry would refuse the token for good.
if count == 1 or redis.call('PTTL', launchesKey) < 0 then redis.call('PEXPIRE', launchesKey, windowMs) end
if count <= limit then return {1, 0} end
return {0, redis.call('PTTL', launchesKey)}
