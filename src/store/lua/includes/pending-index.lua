--[[
  The pending index (ZSET id -> next check time, the sweeper's work list) and the token's pending
  set (SET of ids `end` waits for) always change together: a record is in both or in neither. The
  one exception: a debit being compensated is in its token's set only (includes/debit-state), but
  for the moment its refused stand-in is settled until the hand-over: settle-15 then puts it in the
  pending index too, for the sweeper.
]]
local function addPending(pendingKey, tokenPendingKey, id, checkAt)
  redis.call('ZADD', pendingKey, checkAt, id)
  redis.call('SADD', tokenPendingKey, id)
end

local function removePending(pendingKey, tokenPendingKey, id)
  redis.call('ZREM', pendingKey, id)
  redis.call('SREM', tokenPendingKey, id)
end
