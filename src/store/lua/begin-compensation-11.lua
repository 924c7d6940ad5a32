--[[
  Moves a debit to `compensating` (or, linked to a refund already final, to `compensated`/`dead`)
  and creates its compensation rollback, pending, in the same step.
  - A pending debit (refused to the engine): an engine refund of this very bet that already went
    out stands in for the compensation (the claim refuses refunds of any other bet). One that is
    final already settles the debit in this step: succeeded, the debit is `compensated`; dead,
    the debit is `dead` with it (an operator resolves the refund). Nothing else would: the refund's
    own settle, which moves a linked debit, is over, and its job may be gone. A refund refused for
    good reversed nothing and stands in for nothing, nor does one whose record is gone: the debit
    gets its own compensation.
  - A watched `compensated` debit that the wallet now reports applied (it processed the debit
    after the gateway gave up): a second compensation, with its own id, and the watch ends.
  - A `compensating` debit whose stand-in (an engine refund, linked while its own call was still
    out) the wallet then refused for good: the debit's own compensation replaces it.

  Input:
    KEYS[1] debit record
    KEYS[2] compensation record
    KEYS[3] round
    KEYS[4] pending index
    KEYS[5] token's pending set
    KEYS[6] re-check index
    KEYS[7] time index (operators)
    KEYS[8] the player's recent records (operators)
    KEYS[9] token's watched debits
    KEYS[10] the round's engine refund, when the caller read one there (the compensation record otherwise)
    KEYS[11] the ledger outbox (the debit record itself when no ledger is kept)

    ARGV[1] debit id
    ARGV[2] compensation id
    ARGV[3] lease until (ms)
    ARGV[4] round retention (seconds)
    ARGV[5] the debit's expected state: pending | compensated | compensating
    ARGV[6] the compensation's created at (ms)
    ARGV[7] how many of the player's recent records are kept
    ARGV[8] compensating: the refused stand-in the debit must still name ('' otherwise)
    ARGV[9] the id of the round's rollback KEYS[10] names ('' = none read)
    ARGV[10] n: how many of the following arguments are the debit's field/value pairs
    ARGV[11 .. 10+n] the debit's field/value pairs (an empty value deletes the field)
    ARGV[11+n ..]    the compensation's field/value pairs

  Output:
    {'not_pending', debit state or ''}   not in the expected state (or that compensation exists already)
    {'reread', rollback id or ''}        nothing done: the round's rollback is another than ARGV[9] (read it, call again)
    {'created' | 'linked', compensation id}   ('linked' also when the refund was final already)
]]
local debitKey, compKey, roundKey, pendingKey, tokenPendingKey, recheckKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local timeKey, playerKey, tokenWatchKey, refundKey = KEYS[7], KEYS[8], KEYS[9], KEYS[10]
local outboxKey = KEYS[11] ~= debitKey and KEYS[11] or nil
local debitId, compId, leaseUntil, retentionSeconds, expectedState = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local createdAt, playerCap, standIn, declaredRefund, debitFieldCount = ARGV[6], ARGV[7], ARGV[8], ARGV[9], tonumber(ARGV[10])
local FIRST_DEBIT_FIELD = 11
local firstCompField = FIRST_DEBIT_FIELD + debitFieldCount

--- @include "includes/pending-index"
--- @include "includes/record-indexes"
--- @include "includes/set-fields"
--- @include "includes/drop-body"
--- @include "includes/ledger-outbox"

local state = redis.call('HGET', debitKey, 'state')
if state ~= expectedState then return {'not_pending', state or ''} end
local late = expectedState == 'compensated'
local replacing = expectedState == 'compensating'
if replacing and redis.call('HGET', debitKey, 'compensation_id') ~= standIn then return {'not_pending', state} end
if (late or replacing) and redis.call('EXISTS', compKey) == 1 then return {'not_pending', state} end

local round = redis.call('HMGET', roundKey, 'rollback', 'bet')
local rollback, bet = round[1], round[2]
local result = 'created'
local debitState = 'compensating'
if expectedState == 'pending' and rollback and rollback ~= compId and bet == debitId then
  if rollback ~= declaredRefund then return {'reread', rollback} end
  local refundState = redis.call('HGET', refundKey, 'state')
  -- A refund whose record is gone, or refused for good, stands in for nothing.
  if refundState and refundState ~= 'failed' then
    compId = rollback
    result = 'linked'
    if refundState == 'succeeded' then debitState = 'compensated' elseif refundState == 'dead' then debitState = 'dead' end
  end
end
setFields(debitKey, ARGV, FIRST_DEBIT_FIELD, firstCompField - 1)
redis.call('HSET', debitKey, 'state', debitState, 'compensation_id', compId)
if debitState == 'compensated' then
  -- Rolled back by the refund already: final, its token given back, expiring without its body.
  removePending(pendingKey, tokenPendingKey, debitId)
  redis.call('EXPIRE', debitKey, retentionSeconds)
  dropBody(debitKey)
  toOutbox(outboxKey, debitKey)
  return {result, compId}
end
redis.call('PERSIST', debitKey)
-- Out of the sweeper's work list (its compensation is the work now), but it holds its token until
-- it is compensated (includes/debit-state): a linked refund may hold another token, or none once
-- refused for good.
redis.call('ZREM', pendingKey, debitId)
redis.call('SADD', tokenPendingKey, debitId)
if late then
  redis.call('ZREM', recheckKey, debitId)
  redis.call('SREM', tokenWatchKey, debitId)
  redis.call('HDEL', debitKey, 'recheck_until')
end
if result == 'created' and redis.call('EXISTS', compKey) == 0 then
  redis.call('HSET', compKey, unpack(ARGV, firstCompField))
  addPending(pendingKey, tokenPendingKey, compId, leaseUntil)
  -- A compensation is rare: it always trims.
  indexRecord(timeKey, playerKey, compId, createdAt, retentionSeconds, playerCap, true)
  redis.call('HSET', compKey, 'in_round', '1')
  redis.call('HINCRBY', roundKey, 'open', 1)
  redis.call('HSET', roundKey, 'rollback', compId, 'closed_by', compId)
  redis.call('EXPIRE', roundKey, retentionSeconds)
  toOutbox(outboxKey, compKey)
end
toOutbox(outboxKey, debitKey)
return {result, compId}
