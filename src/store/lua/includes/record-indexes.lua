--[[
  The operators' indexes of a new record, written where it is made: the time index (ZSET id ->
  created at; the reconciliation export pages through it) and the player's recent records (ZSET
  id -> created at), which expires with the retention. Both are trimmed only when `trim` is set
  (the claim sets it on one record in 16, chosen by its id: src/store/record-indexes.ts): the time
  index to the retention, the player's records to their newest `cap`. In between, entries older
  than the retention and a player's records past the cap wait for the next trimming write; the
  readers skip records that expired and read at most a player's newest `cap`. Each write is
  O(log n) (a trim removes an entry once).
]]
local function indexRecord(timeKey, playerKey, id, createdAt, retentionSeconds, cap, trim)
  redis.call('ZADD', timeKey, createdAt, id)
  redis.call('ZADD', playerKey, createdAt, id)
  if trim then
    redis.call('ZREMRANGEBYSCORE', timeKey, '-inf', '(' .. (tonumber(createdAt) - tonumber(retentionSeconds) * 1000))
    redis.call('ZREMRANGEBYRANK', playerKey, 0, -(tonumber(cap) + 1))
  end
  redis.call('EXPIRE', playerKey, retentionSeconds)
end
