--[[
  Moves a pending debit to `compensating` and creates its compensation rollback, pending, in the
  same step. An engine refund of the same bet that already went out stands in for the compensation.

  Input:
    KEYS[1] debit record
    KEYS[2] compensation record
    KEYS[3] round
    KEYS[4] pending index
    KEYS[5] token's pending set

    ARGV[1] debit id
    ARGV[2] compensation id
    ARGV[3] lease until (ms)
    ARGV[4] round retention (seconds)
    ARGV[5] n: how many of the following arguments are the debit's field/value pairs
    ARGV[6 .. 5+n] the debit's field/value pairs
    ARGV[6+n ..]   the compensation's field/value pairs

  Output:
    {'not_pending', debit state or ''}
    {'created' | 'linked', compensation id}
]]
local debitKey, compKey, roundKey, pendingKey, tokenPendingKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local debitId, compId, leaseUntil, retentionSeconds = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local debitFieldCount = tonumber(ARGV[5])
local FIRST_DEBIT_FIELD = 6
local firstCompField = FIRST_DEBIT_FIELD + debitFieldCount

--- @include "includes/pending-index"

local state = redis.call('HGET', debitKey, 'state')
if state ~= 'pending' then return {'not_pending', state or ''} end

local rollback = redis.call('HGET', roundKey, 'rollback')
local result = 'created'
if rollback and rollback ~= compId then
  compId = rollback
  result = 'linked'
end
redis.call('HSET', debitKey, unpack(ARGV, FIRST_DEBIT_FIELD, firstCompField - 1))
redis.call('HSET', debitKey, 'state', 'compensating', 'compensation_id', compId)
redis.call('PERSIST', debitKey)
removePending(pendingKey, tokenPendingKey, debitId)
if result == 'created' and redis.call('EXISTS', compKey) == 0 then
  redis.call('HSET', compKey, unpack(ARGV, firstCompField))
  addPending(pendingKey, tokenPendingKey, compId, leaseUntil)
  redis.call('HSET', compKey, 'in_round', '1')
  redis.call('HINCRBY', roundKey, 'open', 1)
  redis.call('HSET', roundKey, 'rollback', compId, 'closed_by', compId)
  redis.call('EXPIRE', roundKey, retentionSeconds)
end
return {result, compId}
