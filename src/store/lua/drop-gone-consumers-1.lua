--[[
  Removes the consumers of an outbox's consumer group that are gone: no pending entries, and idle
  longer than the bound (a worker that stopped, or died and had its entries claimed by another).
  Checked and removed in one step: a consumer that reads an entry in between is never removed with
  it (XGROUP DELCONSUMER drops the consumer's pending entries, which would then never be written).

  Input:
    KEYS[1] the outbox stream

    ARGV[1] the consumer group
    ARGV[2] the caller's own consumer name (never removed)
    ARGV[3] idle longer than this (ms): gone

  Output: the names of the consumers removed
]]
local outboxKey = KEYS[1]
local group, self, idleBound = ARGV[1], ARGV[2], tonumber(ARGV[3])

local removed = {}
for _, consumer in ipairs(redis.call('XINFO', 'CONSUMERS', outboxKey, group)) do
  local info = {}
  for i = 1, #consumer, 2 do info[consumer[i]] = consumer[i + 1] end
  if info.name ~= self and info.pending == 0 and info.idle > idleBound then
    redis.call('XGROUP', 'DELCONSUMER', outboxKey, group, info.name)
    removed[#removed + 1] = info.name
  end
end
return removed
