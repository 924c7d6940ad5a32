--[[
  Moves an open session to `ending`, and keeps it (no expiry) while its end is outstanding.

  Input:
    KEYS[1] session

  Output: the state the session had, or false when there is no such session
]]
local sessionKey = KEYS[1]
local state = redis.call('HGET', sessionKey, 'state')
if not state then return false end
if state == 'open' then
  redis.call('HSET', sessionKey, 'state', 'ending')
  redis.call('PERSIST', sessionKey)
end
return state
