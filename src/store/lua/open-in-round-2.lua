--[[
  How many other credits/rollbacks of the record's round are not final yet.

  Input:
    KEYS[1] transaction record
    KEYS[2] round

  Output: the count
]]
local txKey, roundKey = KEYS[1], KEYS[2]
local open = tonumber(redis.call('HGET', roundKey, 'open') or '0')
if redis.call('HGET', txKey, 'in_round') == '1' then open = open - 1 end
return open
