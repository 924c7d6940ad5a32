--[[
  The ledger's outbox (contract 12): a record's state after this step's change, appended to the
  shard's outbox stream in the step that made the change, and numbered (the record's `change_no`
  counts its changes). Every entry has the same fields in the same order, an absent value as '':
  the stream then stores the field names once per listpack node. Without a ledger the caller passes
  the record's own key as the outbox key; the script's outbox local is then nil, and nothing is
  written. `engineRequestId`: the engine call that made this change (the claim); other changes
  carry '' and the ledger's writer gives them the record's first one.
]]
local LEDGER_FIELDS = {'kind', 'state', 'amount', 'currency', 'player_id', 'site_id', 'session_id', 'round_id',
  'wallet_round_id', 'reference_id', 'is_compensation', 'compensation_id', 'attempts', 'last_code', 'balance', 'error', 'resolution',
  'note', 'created_at', 'updated_at'}

local function toOutbox(outboxKey, recordKey, attempt, engineRequestId)
  if not outboxKey then return end
  local id = redis.call('HGET', recordKey, 'id')
  if not id then return end
  local entry = {'t', 'tx', 'id', id, 'change_no', tostring(redis.call('HINCRBY', recordKey, 'change_no', 1))}
  local values = redis.call('HMGET', recordKey, unpack(LEDGER_FIELDS))
  for i, name in ipairs(LEDGER_FIELDS) do
    entry[#entry + 1] = name
    entry[#entry + 1] = values[i] or ''
  end
  entry[#entry + 1] = 'attempt'
  entry[#entry + 1] = attempt or ''
  entry[#entry + 1] = 'engine_request_id'
  entry[#entry + 1] = engineRequestId or ''
  redis.call('XADD', outboxKey, '*', unpack(entry))
end
