--[[
  Applies an update to a record if it is still in an expected state (and, when given, has made
  exactly the expected number of attempts), and moves everything that hangs on the record's state
  in the same step: the pending index, the token's pending set, the dead index, the round's count
  of open credits/rollbacks, the session's balance, and the debit a compensation stands for (and
  the sweeper's look at that debit when the refund standing in for it was refused for good).

  Dead work still holds its token (no terminate) and its round (a held closer keeps waiting): it
  stays in the token's pending set and in the round's open count until it leaves `dead`.

  A compensation that found its debit never applied leaves the debit `compensated` but watched:
  in the re-check index, body kept, until the watch ends (contract 5.4). The watch holds the
  debit's own token, not the compensation's: an engine refund standing in for it may be on another
  token of the player, and the debit's own final settle, which ends the watch, names its own token.

  An engine refund of a bet the wallet refused for good has nothing to reverse (the bet never took
  money). Decided here in both orders, atomically with the bet's state: a refund's own settle may
  be made "only if its bet is refused for good" (the worker's or gateway's try failed after that
  refusal), and the bet's refusal itself settles a refund of it that already went dead (its tries
  met no bet at the wallet while the bet was still out). Either way it ends `succeeded`, noting
  that nothing was reversed, and gives back what it held. A refund still pending is left to its
  next try: its call may be at the wallet now, and that try must still be counted.

  An engine refund standing in for its bet's compensation, whose bet wallet `status` found never
  applied, has nothing to reverse either: its settle is made "only while it stands in", and moves
  the bet `compensated` and watched in the same step, as the compensation's would.

  A final record expires after the retention, but a dead one stays until an operator acted. What
  gets the retention expiry can never be sent again, so its wallet body and its attempt log go in
  the same step; a dead record keeps them for a redrive, the dead-check and the operators, a
  pending or compensating one for its retries and compensation.

  The attempt log (a capped list: time, code, latency, the wallet's request id per attempt) gets
  the attempt this settle records, unless the record becomes final for good in the same step.

  Input:
    KEYS[1] transaction record
    KEYS[2] round
    KEYS[3] pending index
    KEYS[4] token's pending set
    KEYS[5] dead index
    KEYS[6] session
    KEYS[7] referenced debit (the record itself when it references none)
    KEYS[8] re-check index
    KEYS[9] the record's attempt log
    KEYS[10] the watched debits of the token KEYS[11] belongs to
    KEYS[11] the referenced debit's token's pending set (the record's own token's, as a first guess)
    KEYS[12] a debit refused for good: its round's engine refund, as the caller read it (the record itself otherwise)
    KEYS[13] that refund's attempt log (the record's own otherwise)
    KEYS[14] that refund's token's pending set (the record's own token's otherwise)
    KEYS[15] the ledger outbox (the record itself when no ledger is kept)

    ARGV[1]  the arguments below as one JSON array of strings (args[n]):
    [1]   transaction id
    [2]   new state
    [3]   final: '1' | '0'
    [4]   release round: '1' | '0' (a refused call gives its round back)
    [5]   retention (seconds)
    [6]   next check at (ms): of a state that is not final; of a refund refused for good that stood
          in for a debit's compensation, when the sweeper looks at that debit
    [7]   session balance ('' = leave it)
    [8]   now (ms)
    [9]   debit state ('' = leave the referenced debit alone)
    [10]  expected states, comma separated
    [11]  expected attempts ('' = any)
    [12]  watch the debit until (ms; '' = no watch)
    [13]  the debit's first re-check (ms)
    [14]  the attempt this settle records, as an attempt-log entry ('' = none)
    [15]  the attempt log's cap (entries)
    [16]  the token ref KEYS[11] belongs to
    [17]  'bet-refused': applies only while the referenced debit is refused for good (failed, not
          reclaimable); 'stands-in': only while it is `compensating` and names this record as its
          compensation; '': no such condition
    [18]  '1': this is a debit refused for good; a dead engine refund of it is settled with it
    [19]  the id of the refund KEYS[12] names ('' = none read)
    [20]  the token ref KEYS[14] belongs to
    [21]  the note a refund with nothing to reverse gets
    [22]  how many pieces the record's wallet body is stored in, as the caller knows it ('0' = not
          known): a final record's pieces then go in one HDEL (includes/drop-body)
    [23..] field/value pairs to set besides `updated_at` ([8]) and `state` ([2]) (an empty value
          deletes the field)

  Output: 1 applied, 0 not (missing, not in an expected state, or the debit is not as [17] asks),
  and, with nothing done:
    {'token', ref}   the debit this record moves holds another token (KEYS[11] must be its pending set)
    {'refund', id}   the round's engine refund is another than [19] (KEYS[12..13] must be its)
    {'refund_token', ref}   that refund holds another token than [20] (KEYS[14] must be its pending set)
]]
local txKey, roundKey, pendingKey, tokenPendingKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local deadKey, sessionKey, debitKey, recheckKey, attemptsKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local tokenWatchKey, debitTokenPendingKey = KEYS[10], KEYS[11]
local refundKey, refundAttemptsKey, refundTokenPendingKey = KEYS[12], KEYS[13], KEYS[14]
local outboxKey = KEYS[15] ~= txKey and KEYS[15] or nil
local args = cjson.decode(ARGV[1])
local id, newState, final, releaseRound = args[1], args[2], args[3] == '1', args[4] == '1'
local retentionSeconds, nextCheckAt, sessionBalance, now = args[5], args[6], args[7], args[8]
local debitState, expectedStates, expectedAttempts = args[9], args[10], args[11]
local watchUntil, firstRecheck, attempt, attemptCap = args[12], args[13], args[14], args[15]
local declaredDebitToken, onlyIf, refusedForGood = args[16], args[17], args[18] == '1'
local declaredRefund, declaredRefundToken, nothingReversedNote, bodyPieces = args[19], args[20], args[21], args[22]
local FIRST_FIELD = 23

--- @include "includes/pending-index"
--- @include "includes/drop-body"
--- @include "includes/release-final"
--- @include "includes/debit-state"
--- @include "includes/set-fields"
--- @include "includes/ledger-outbox"

local function logAttempt()
  if attempt == '' then return end
  redis.call('RPUSH', attemptsKey, attempt)
  redis.call('LTRIM', attemptsKey, -tonumber(attemptCap), -1)
end

-- What the steps below read of the record, in one command (no update sets `in_round` or `kind`).
local held = redis.call('HMGET', txKey, 'state', 'attempts', 'in_round', 'kind')
local current, inRound, recordKind = held[1], held[3] or '', held[4]
if not current then return 0 end
if not string.find(',' .. expectedStates .. ',', ',' .. current .. ',', 1, true) then return 0 end
if expectedAttempts ~= '' and held[2] ~= expectedAttempts then return 0 end
local otherToken = undeclaredDebitToken(txKey, debitKey, id, debitState, declaredDebitToken)
if otherToken then return {'token', otherToken} end
if onlyIf == 'stands-in' and (debitKey == txKey or redis.call('HGET', debitKey, 'state') ~= 'compensating'
    or redis.call('HGET', debitKey, 'compensation_id') ~= id) then
  return 0
end
if onlyIf == 'bet-refused' and (debitKey == txKey or redis.call('HGET', debitKey, 'kind') ~= 'debit'
    or redis.call('HGET', debitKey, 'state') ~= 'failed' or redis.call('HGET', debitKey, 'reclaim') == '1') then
  return 0
end
local deadRefund = nil
if refusedForGood then
  local round = redis.call('HMGET', roundKey, 'rollback', 'bet')
  if round[1] and round[2] == id then
    if round[1] ~= declaredRefund then return {'refund', round[1]} end
    local refund = redis.call('HMGET', refundKey, 'state', 'reference_id', 'is_compensation', 'token_ref')
    if refund[1] == 'dead' and refund[2] == id and refund[3] ~= '1' then
      if refund[4] ~= declaredRefundToken then return {'refund_token', refund[4]} end
      deadRefund = round[1]
    end
  end
end

setFields(txKey, args, FIRST_FIELD, #args, 'updated_at', now, 'state', newState)
if newState == 'dead' then
  redis.call('ZREM', pendingKey, id)
  redis.call('SADD', tokenPendingKey, id)
  redis.call('PERSIST', txKey)
  redis.call('ZADD', deadKey, now, id)
  logAttempt()
elseif final then
  releaseFinal(txKey, roundKey, pendingKey, tokenPendingKey, deadKey, recheckKey, attemptsKey, id, retentionSeconds, bodyPieces, inRound)
  -- A watched debit's own final settle ends its watch (a debit's KEYS[10] is its own token's).
  redis.call('SREM', tokenWatchKey, id)
else
  redis.call('PERSIST', txKey)
  addPending(pendingKey, tokenPendingKey, id, nextCheckAt)
  redis.call('ZREM', deadKey, id)
  if inRound == '0' and recordKind ~= 'debit' then
    redis.call('HSET', txKey, 'in_round', '1')
    if redis.call('EXISTS', roundKey) == 1 then redis.call('HINCRBY', roundKey, 'open', 1) end
  end
  logAttempt()
end

if releaseRound then
  local r = redis.call('HMGET', roundKey, 'bet', 'closed_by', 'rollback')
  if r[1] == id then redis.call('HDEL', roundKey, 'bet', 'bet_round', 'bet_amount') end
  if r[2] == id then redis.call('HDEL', roundKey, 'closed_by') end
  if r[3] == id then redis.call('HDEL', roundKey, 'rollback') end
  -- A win refused before any acknowledgement no longer keeps its bet from being refunded.
  if recordKind == 'credit' and redis.call('EXISTS', roundKey) == 1 then redis.call('HINCRBY', roundKey, 'wins', -1) end
end

if sessionBalance ~= '' and redis.call('EXISTS', sessionKey) == 1 then
  redis.call('HSET', sessionKey, 'balance', sessionBalance)
end

-- A debit its compensation found never applied is watched, and asked about before its own token's
-- terminate (KEYS[10] is that token's, checked with KEYS[11] by undeclaredDebitToken above).
if watchUntil ~= '' and debitState == 'compensated' and redis.call('HGET', debitKey, 'compensation_id') == id then
  redis.call('SADD', tokenWatchKey, redis.call('HGET', debitKey, 'id'))
end
toOutbox(outboxKey, txKey, attempt)
if moveDebit(debitKey, debitTokenPendingKey, recheckKey, id, debitState, now, retentionSeconds, watchUntil, firstRecheck) then
  toOutbox(outboxKey, debitKey)
end

if deadRefund then
  redis.call('HSET', refundKey, 'state', 'succeeded', 'last_code', '1', 'note', nothingReversedNote, 'updated_at', now)
  redis.call('HDEL', refundKey, 'error')
  releaseFinal(refundKey, roundKey, pendingKey, refundTokenPendingKey, deadKey, recheckKey, refundAttemptsKey, deadRefund, retentionSeconds)
  toOutbox(outboxKey, refundKey)
end

-- A refund refused for good that stood in for a debit's compensation: the debit's own compensation
-- takes over right after this settle (replaceFailedRollback). Should that process die first, with
-- no job of the refund behind it, the sweeper finds the debit here.
if newState == 'failed' and debitKey ~= txKey and redis.call('HGET', debitKey, 'state') == 'compensating'
    and redis.call('HGET', debitKey, 'compensation_id') == id then
  redis.call('ZADD', pendingKey, nextCheckAt, redis.call('HGET', debitKey, 'id'))
end
return 1
