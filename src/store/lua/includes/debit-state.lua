--[[
  Moves the debit a compensation (or the refund standing in for it) belongs to, when the record is
  still that debit's compensation. `compensating`/`dead` keep it; `compensated` with a watch keeps
  it in the re-check index (contract 5.4); any other state lets it expire, without its body.
  Needs includes/drop-body.
]]
local function moveDebit(debitKey, recheckKey, id, debitState, now, retentionSeconds, watchUntil, firstRecheck)
  if debitState == '' or redis.call('HGET', debitKey, 'compensation_id') ~= id then return end
  redis.call('HSET', debitKey, 'state', debitState, 'updated_at', now)
  if debitState == 'compensating' or debitState == 'dead' then
    redis.call('PERSIST', debitKey)
  elseif watchUntil ~= '' then
    redis.call('HSET', debitKey, 'recheck_until', watchUntil)
    redis.call('PERSIST', debitKey)
    redis.call('ZADD', recheckKey, firstRecheck, redis.call('HGET', debitKey, 'id'))
  else
    redis.call('EXPIRE', debitKey, retentionSeconds)
    dropBody(debitKey)
  end
end
