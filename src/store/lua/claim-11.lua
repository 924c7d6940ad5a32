--[[
  Claims a transaction id before any wallet call: idempotency, the session's state, the round
  rules and the fate of a win's or refund's bet (contract 5.2), decided and recorded in one step. A record marked `reclaim` (a bet refused unsent, its
  claim not durable) is no answer to a repeat: the repeat is claimed afresh.

  Input:
    KEYS[1] transaction record
    KEYS[2] round
    KEYS[3] session
    KEYS[4] pending index
    KEYS[5] token's pending set
    KEYS[6] token
    KEYS[7] token's sessions
    KEYS[8] time index (operators)
    KEYS[9] the player's recent records (operators)
    KEYS[10] the bet a win or refund names (a bet: its own record again)
    KEYS[11] the ledger outbox (the record itself when no ledger is kept)

    ARGV[1]  the arguments below as one JSON array of strings (args[n]):
    [1]   kind: debit | credit | rollback
    [2]   body hash (idempotency)
    [3]   lease until (ms): the sweeper leaves the record alone until then
    [4]   round closed: '1' | '0'
    [5]   reference id (the engine's bet_transaction_id; '' for a debit)
    [6]   the engine's round id
    [7]   amount as exact decimal text, trailing fraction zeros dropped
    [8]   round retention (seconds)
    [9]   transaction id
    [10]  session ttl (seconds; '' leaves the expiry)
    [11]  created at (ms)
    [12]  how many of the player's recent records are kept
    [13]  currency
    [14]  the prefix of the ids the gateway derives (its compensations')
    [15]  the engine request's id, for the ledger's outbox entry only ('' without a ledger)
    [16]  trim the operators' indexes: '1' | '' (includes/record-indexes)
    The new record's other values (the script names their fields; with [1], [2], [4], [5], [6], [9],
    [11] and [13] it stores the fields src/store/record-codec.ts newRecordFields lays out):
    [17]  session id
    [18]  token ref
    [19]  player id
    [20]  site id
    [21]  wallet round id
    [22]  amount as the engine sent it
    [23]  wallet operation
    [24]  updated at (ms)
    [25..] the record's other fields as field/value pairs: the flags that are set (round_closed,
          is_compensation), reference_id when there is one, and the wallet body's pieces

  Output:
    {refusal}                        conflict | session_not_found | session_ended | round_closed |
                                     round_has_bet | bet_not_found | bet_already_refunded | amount_mismatch |
                                     currency_mismatch | in_progress | bet_not_open
    {'claimed' | 'deferred', session balance}
    {'duplicate', session balance or nil, record field/value pairs...}
]]
local txKey, roundKey, sessionKey, pendingKey, tokenPendingKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local tokenKey, tokenSessionsKey, timeKey, playerKey, betKey = KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10]
local outboxKey = KEYS[11] ~= txKey and KEYS[11] or nil
local args = cjson.decode(ARGV[1])
local kind, bodyHash, leaseUntil, closesRound = args[1], args[2], args[3], args[4] == '1'
local referenceId, engineRoundId, amount = args[5], args[6], args[7]
local retentionSeconds, id, sessionTtl, createdAt, playerCap, currency = args[8], args[9], args[10], args[11], args[12], args[13]
local derivedPrefix, engineRequestId = args[14], args[15]
local trimIndexes = args[16] == '1'
local FIRST_PAIR = 25

--- @include "includes/pending-index"
--- @include "includes/renew-token"
--- @include "includes/record-indexes"
--- @include "includes/ledger-outbox"

local existing = redis.call('HGET', txKey, 'body_hash')
-- A record claimed afresh over a reclaimable one is the same record: it goes on numbering its
-- ledger changes and keeps its first claim's time (the ledger names a record by its id and
-- creation time; it is no late repeat).
local priorChanges, priorCreatedAt = nil, nil
if existing then
  if existing ~= bodyHash then return {'conflict'} end
  -- A bet refused unsent because its claim was not durable ("safe to repeat"): claimed afresh. It
  -- gave its round back and left every index when it was refused.
  if redis.call('HGET', txKey, 'reclaim') == '1' then
    local prior = redis.call('HMGET', txKey, 'change_no', 'created_at')
    priorChanges, priorCreatedAt = prior[1], prior[2]
    redis.call('DEL', txKey)
  else
    local rec = redis.call('HGETALL', txKey)
    table.insert(rec, 1, redis.call('HGET', sessionKey, 'balance'))
    table.insert(rec, 1, 'duplicate')
    return rec
  end
end

local session = redis.call('HMGET', sessionKey, 'state', 'balance')
local sessionState = session[1]
if not sessionState then return {'session_not_found'} end
if sessionState == 'ended' or (kind == 'debit' and sessionState ~= 'open') then return {'session_ended'} end
-- Once the token's terminate is decided, nothing new may need the token (contract 5.6).
local token = redis.call('HMGET', tokenKey, 'state', 'ending')
if token[1] then return {'session_ended'} end

local round = redis.call('HMGET', roundKey, 'bet', 'bet_round', 'bet_amount', 'closed_by', 'rollback', 'open', 'wins')
local bet, betRound, betAmount, closedBy, rollback, open, wins = round[1], round[2], round[3], round[4], round[5], round[6], round[7]
-- A round closed by the gateway's own compensation was not closed by an engine call: a win or
-- refund there learns that its bet was rolled back (below).
local closedByCompensation = closedBy and string.lower(string.sub(closedBy, 1, #derivedPrefix)) == derivedPrefix
if closedBy and (kind == 'debit' or not closedByCompensation) then return {'round_closed'} end
if kind == 'debit' then
  if bet then return {'round_has_bet'} end
else
  -- A win or refund names the round's own bet: a refund may stand in for that bet's compensation,
  -- never another's.
  local betRecord = redis.call('HMGET', betKey, 'state', 'currency', 'kind', 'round_id')
  local betState = betRecord[1]
  if bet ~= referenceId or betRound ~= engineRoundId then
    -- A bet refused for good gave its round back; it is still this player's bet of this round
    -- (the same session, or another of the same token): not open, rather than never recorded.
    if betState == 'failed' and betRecord[3] == 'debit' and betRecord[4] == engineRoundId
        and redis.call('HGET', betKey, 'token_ref') == redis.call('HGET', sessionKey, 'token_ref') then
      return {'bet_not_open'}
    end
    return {'bet_not_found'}
  end
  if not betState then return {'bet_not_found'} end
  if betRecord[2] ~= currency then return {'currency_mismatch'} end
  if kind == 'credit' then
    -- A win follows its bet's fate: paid only on a debit that succeeded and was not reversed.
    if betState == 'pending' then return {'in_progress'} end
    if betState ~= 'succeeded' or rollback then return {'bet_not_open'} end
  else
    if rollback then return {'bet_already_refunded'} end
    -- Refunds and wins exclude each other (a refund while the bet is still at the wallet may stand
    -- in for its compensation).
    if tonumber(wins or '0') > 0 then return {'bet_not_open'} end
    if betAmount ~= amount then return {'amount_mismatch'} end
  end
end

if priorCreatedAt then createdAt = priorCreatedAt end
-- The record as newRecordFields lays it out, in one literal call: no table is built for it.
redis.call('HSET', txKey, 'id', id, 'kind', kind, 'state', 'pending', 'session_id', args[17], 'token_ref', args[18],
  'player_id', args[19], 'site_id', args[20], 'round_id', engineRoundId, 'wallet_round_id', args[21], 'amount', args[22],
  'currency', currency, 'body_hash', bodyHash, 'op', args[23], 'attempts', '0', 'in_round', '0', 'created_at', createdAt,
  'updated_at', args[24], unpack(args, FIRST_PAIR))
if priorChanges then redis.call('HSET', txKey, 'change_no', priorChanges) end
addPending(pendingKey, tokenPendingKey, id, leaseUntil)
indexRecord(timeKey, playerKey, id, createdAt, retentionSeconds, playerCap, trimIndexes)
-- A call that closes the round must not overtake earlier credits/rollbacks still pending in it:
-- the wallet would refuse their retries once the round is closed.
local deferred = kind ~= 'debit' and closesRound and tonumber(open or '0') > 0
if kind ~= 'debit' then
  redis.call('HINCRBY', roundKey, 'open', 1)
  redis.call('HSET', txKey, 'in_round', '1')
end
if deferred then redis.call('HSET', txKey, 'deferred', '1') end
if kind == 'debit' then
  redis.call('HSET', roundKey, 'bet', id, 'bet_round', engineRoundId, 'bet_amount', amount)
elseif kind == 'rollback' then
  redis.call('HSET', roundKey, 'rollback', id)
else
  -- Taken back by the settle that refuses it (releaseRound), as the round's other holds are.
  redis.call('HINCRBY', roundKey, 'wins', 1)
end
if closesRound then redis.call('HSET', roundKey, 'closed_by', id) end
toOutbox(outboxKey, txKey, nil, engineRequestId)
redis.call('EXPIRE', roundKey, retentionSeconds)
-- The session's sliding expiry, as the session store's touch renews it (an ending session has none).
if sessionTtl ~= '' and sessionState ~= 'ending' then
  redis.call('EXPIRE', sessionKey, sessionTtl)
  -- The token's hash as read above: nothing in this step changes it.
  renewUnlessHeld(tokenKey, tokenSessionsKey, sessionTtl, token[1], token[2])
end
local balance = session[2] or '0'
if deferred then return {'deferred', balance} end
return {'claimed', balance}
