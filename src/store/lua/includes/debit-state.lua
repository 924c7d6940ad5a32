--[[
  Moves the debit a compensation (or the refund standing in for it) belongs to, when the record is
  still that debit's compensation. `compensating`/`dead` keep it, and it keeps holding its own
  token (begin-compensation put it in the token's pending set); any other state gives the token
  back. The hold is the debit's, not its compensation's: a refund standing in for the compensation
  may be on another token of the player, or refused for good and settled before the debit's own
  compensation replaces it, and `end` must not terminate the token the stake is rolled back on in
  either gap. `compensated` with a watch keeps the debit in the re-check index (contract 5.4, the
  watch set holds the terminate); any other state lets it expire, without its body.
  `debitTokenPendingKey`: the pending set of the debit's own token (declared by the caller, which
  checked it against the debit's token_ref). Returns true when it moved the debit.
  Needs includes/drop-body.
]]
local function moveDebit(debitKey, debitTokenPendingKey, recheckKey, id, debitState, now, retentionSeconds, watchUntil, firstRecheck)
  if debitState == '' or redis.call('HGET', debitKey, 'compensation_id') ~= id then return false end
  redis.call('HSET', debitKey, 'state', debitState, 'updated_at', now)
  local debitId = redis.call('HGET', debitKey, 'id')
  if debitState == 'compensating' or debitState == 'dead' then
    redis.call('PERSIST', debitKey)
    redis.call('SADD', debitTokenPendingKey, debitId)
    return true
  end
  redis.call('SREM', debitTokenPendingKey, debitId)
  if watchUntil ~= '' then
    redis.call('HSET', debitKey, 'recheck_until', watchUntil)
    redis.call('PERSIST', debitKey)
    redis.call('ZADD', recheckKey, firstRecheck, debitId)
  else
    redis.call('EXPIRE', debitKey, retentionSeconds)
    dropBody(debitKey)
  end
  return true
end

--[[
  The token of the debit that moveDebit would move, when it is not the one the caller declared
  (the caller then names that token's pending set and calls again; nothing was changed). nil when
  nothing is moved or the declared token is the debit's.
]]
local function undeclaredDebitToken(txKey, debitKey, id, debitState, declaredDebitToken)
  if debitState == '' or debitKey == txKey or redis.call('HGET', debitKey, 'compensation_id') ~= id then return nil end
  local debitToken = redis.call('HGET', debitKey, 'token_ref')
  if debitToken == declaredDebitToken then return nil end
  return debitToken
end
