--[[
  Counts one event against a limit per fixed window (a window starts with its first event); events
  over the limit count too. A token's launches (TOKEN_LAUNCHES_PER_MINUTE), the audit entries of
  unknown ids.

  Input:
    KEYS[1] the window's count

    ARGV[1] events allowed in a window
    ARGV[2] the window (ms)

  Output: {1, 0} allowed, or {0, ms until the window ends}
]]
local countKey = KEYS[1]
local limit, windowMs = tonumber(ARGV[1]), ARGV[2]

local count = redis.call('INCR', countKey)
-- A key left without an expiry would refuse for good.
if count == 1 or redis.call('PTTL', countKey) < 0 then redis.call('PEXPIRE', countKey, windowMs) end
if count <= limit then return {1, 0} end
return {0, redis.call('PTTL', countKey)}
