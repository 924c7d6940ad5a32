--[[
  The operators' indexes of a new record, written where it is made: the time index (ZSET id ->
  created at; the reconciliation export pages through it) trimmed to the retention, and the
  player's recent records (ZSET id -> created at) capped to its newest `cap` and expiring with
  the retention. Each write is O(log n) (a trim removes an entry once).
]]
local function indexRecord(timeKey, playerKey, id, createdAt, retentionSeconds, cap)
  redis.call('ZADD', timeKey, createdAt, id)
  redis.call('ZREMRANGEBYSCORE', timeKey, '-inf', '(' .. (tonumber(createdAt) - tonumber(retentionSeconds) * 1000))
  redis.call('ZADD', playerKey, createdAt, id)
  redis.call('ZREMRANGEBYRANK', playerKey, 0, -(tonumber(cap) + 1))
  redis.call('EXPIRE', playerKey, retentionSeconds)
end
