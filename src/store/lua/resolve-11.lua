--[[
  An operator's manual resolution of a dead record, after checking the wallet: "applied at the
  wallet" (succeeded) or "not applied, and it will not be" (failed, with its resolution). No wallet
  call: it only records what the operator found. Checked and done in one step, so it never runs
  twice and never races a redrive, a retry or the dead-check: only a record still `dead` moves.

  A resolution releases what the dead record held, as any final settle does: its round's open
  count (a held closer may go), its token's pending set (the terminate may go), the dead index;
  the record expires after the retention without its wallet body and attempt log. The debit a
  compensation belongs to moves with it. The audit entry is written in the same step.

  A rollback resolved "not applied" re-opens its debit (`compensating`, its token still held): the
  console starts the debit's next compensation right after this step, and the sweeper does it
  (the debit is put in the pending index) should that be lost.

  Input:
    KEYS[1] transaction record
    KEYS[2] round
    KEYS[3] pending index
    KEYS[4] token's pending set
    KEYS[5] dead index
    KEYS[6] referenced debit (the record itself when it references none)
    KEYS[7] re-check index
    KEYS[8] the record's attempt log
    KEYS[9] audit stream
    KEYS[10] the referenced debit's token's pending set (the record's own token's, as a first guess)
    KEYS[11] the ledger outbox (the record itself when no ledger is kept)

    ARGV[1] transaction id
    ARGV[2] retention (seconds)
    ARGV[3] now (ms)
    ARGV[4] debit state ('' = leave the referenced debit alone; `compensating` re-opens it)
    ARGV[5] audit stream cap (entries, approximate)
    ARGV[6] the token ref KEYS[10] belongs to
    ARGV[7] n: how many of the following arguments are the record's field/value pairs
    ARGV[8 .. 7+n] the record's field/value pairs (an empty value deletes the field)
    ARGV[8+n ..]   the audit entry's field/value pairs

  Output:
    {'resolved'}
    {'not_dead', state or ''}   not dead (any more), or missing: nothing changed
    {'token', ref}              nothing changed: the debit holds another token (KEYS[10] must be its pending set)
]]
local txKey, roundKey, pendingKey, tokenPendingKey, deadKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local debitKey, recheckKey, attemptsKey, auditKey, debitTokenPendingKey = KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10]
local outboxKey = KEYS[11] ~= txKey and KEYS[11] or nil
local id, retentionSeconds, now, debitState, auditCap = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local declaredDebitToken, recordFieldCount = ARGV[6], tonumber(ARGV[7])
local FIRST_RECORD_FIELD = 8
local firstAuditField = FIRST_RECORD_FIELD + recordFieldCount

--- @include "includes/pending-index"
--- @include "includes/drop-body"
--- @include "includes/release-final"
--- @include "includes/debit-state"
--- @include "includes/set-fields"
--- @include "includes/ledger-outbox"

local state = redis.call('HGET', txKey, 'state')
if state ~= 'dead' then return {'not_dead', state or ''} end
local otherToken = undeclaredDebitToken(txKey, debitKey, id, debitState, declaredDebitToken)
if otherToken then return {'token', otherToken} end

setFields(txKey, ARGV, FIRST_RECORD_FIELD, firstAuditField - 1)
releaseFinal(txKey, roundKey, pendingKey, tokenPendingKey, deadKey, recheckKey, attemptsKey, id, retentionSeconds)
if debitState == 'compensating' and redis.call('HGET', debitKey, 'compensation_id') == id then
  redis.call('ZADD', pendingKey, now, redis.call('HGET', debitKey, 'id'))
end
toOutbox(outboxKey, txKey)
if moveDebit(debitKey, debitTokenPendingKey, recheckKey, id, debitState, now, retentionSeconds, '', '') then
  toOutbox(outboxKey, debitKey)
end
redis.call('XADD', auditKey, 'MAXLEN', '~', auditCap, '*', unpack(ARGV, firstAuditField))
if outboxKey then redis.call('XADD', outboxKey, '*', 't', 'audit', unpack(ARGV, firstAuditField)) end
return {'resolved'}
