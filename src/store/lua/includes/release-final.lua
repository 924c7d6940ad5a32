--[[
  What a record that became final for good (succeeded, failed, compensated) gives back, in the step
  that makes it final: its place in its round's open count (a held closer may go), the pending
  index and its token's pending set (the terminate may go), the dead and re-check indexes; it
  expires after the retention, and what can never be sent again goes: the wallet body and the
  attempt log.
  `bodyPieces`: how many pieces its wallet body is expected in (includes/drop-body; nil: unknown).
  `inRound`: its `in_round` as the caller read it in this step ('' when absent; nil: read here).
  Needs includes/pending-index and includes/drop-body.
]]
local function releaseFinal(txKey, roundKey, pendingKey, tokenPendingKey, deadKey, recheckKey, attemptsKey, id, retentionSeconds, bodyPieces, inRound)
  if (inRound or redis.call('HGET', txKey, 'in_round')) == '1' then
    redis.call('HSET', txKey, 'in_round', '0')
    if redis.call('EXISTS', roundKey) == 1 then redis.call('HINCRBY', roundKey, 'open', -1) end
  end
  removePending(pendingKey, tokenPendingKey, id)
  redis.call('EXPIRE', txKey, retentionSeconds)
  redis.call('ZREM', deadKey, id)
  redis.call('ZREM', recheckKey, id)
  dropBody(txKey, bodyPieces)
  redis.call('DEL', attemptsKey)
end
