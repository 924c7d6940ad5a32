--[[
  Renews one process's presence among those sharing a wallet's max_in_flight, with the calls it has
  open at the wallet now; drops the processes whose presence ran out (killed: they never left),
  their calls with them.

  Input:
    KEYS[1] ZSET process id -> until when it counts
    KEYS[2] HASH process id -> its calls open at the wallet (as of its last renewal)

    ARGV[1] now (ms)
    ARGV[2] this process's id
    ARGV[3] its calls open now
    ARGV[4] how long a presence counts (ms)

  Output: the processes counted now (this one included)
]]
local presenceKey, callsKey = KEYS[1], KEYS[2]
local now, self, calls, presenceMs = tonumber(ARGV[1]), ARGV[2], ARGV[3], tonumber(ARGV[4])

local gone = redis.call('ZRANGEBYSCORE', presenceKey, '-inf', now)
if #gone > 0 then
  redis.call('ZREMRANGEBYSCORE', presenceKey, '-inf', now)
  redis.call('HDEL', callsKey, unpack(gone))
end
redis.call('ZADD', presenceKey, now + presenceMs, self)
redis.call('HSET', callsKey, self, calls)
redis.call('PEXPIRE', presenceKey, presenceMs)
redis.call('PEXPIRE', callsKey, presenceMs)
return redis.call('ZCARD', presenceKey)
