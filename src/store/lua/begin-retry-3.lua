--[[
  A worker's retry run, first step: reads the record and, when the run may go straight to its
  wallet attempt, starts that attempt in the same step (one round trip instead of a read and a
  compare-and-set). The attempt starts exactly as settle-15 starts it for the worker (attempts + 1,
  the placeholder 'u' in the history, in flight until, the pending index's next check), and only
  when every check the worker makes before an attempt passes with nothing for it to do:

    the record is pending, a credit or rollback, counted in its round; not a held round closer
    (deferred, no attempt yet); not an engine call whose inline try may still be out (no attempt
    yet, not queued); no attempt in flight; and either no attempt made yet (a queued call, a
    compensation), or the last one answered 'u' or a plain retry code with retries left, and that
    retry is due; and when that answer was 'u' or an outage code, a health check passed after it
    (else the worker's gate waits for the breaker's verdict).

  Anything else (a 34/39, a final code, no retries left, too early, in flight, held) is returned
  unchanged for the worker's own checks, which then decide as before. A pending record is in the
  pending index and its token's pending set already (includes/pending-index); only its next check
  time moves here.

  Input:
    KEYS[1] transaction record
    KEYS[2] pending index
    KEYS[3] the ledger outbox (the record itself when no ledger is kept)

    ARGV[1]  the arguments below as one JSON array of strings (args[n]):
    [1]   transaction id
    [2]   now (ms)
    [3]   start the attempt at all: '1' | '0' (the wallet circuit breaker is not closed: only read)
    [4]   in flight until (ms)
    [5]   next check at (ms)
    [6]   plain retry codes, comma separated
    [7]   delay before retry n (ms), n = 1.. in order, comma separated (as many as retries allowed)
    [8]   outage codes, comma separated
    [9]   when a health check last passed (ms, 0: never)

  Output:
    {}                                  no such record
    {'started', field/value pairs...}   the record as it was before this attempt started
    {'read', field/value pairs...}      the record; nothing changed
]]
local txKey, pendingKey = KEYS[1], KEYS[2]
local outboxKey = KEYS[3] ~= txKey and KEYS[3] or nil

--- @include "includes/ledger-outbox"

local args = cjson.decode(ARGV[1])
local id, now, mayStart, inFlightUntil, nextCheckAt = args[1], tonumber(args[2]), args[3] == '1', args[4], args[5]
local plainCodes, delayList = args[6], args[7]
local outageCodes, healthOkAt = args[8], tonumber(args[9])

local rec = redis.call('HGETALL', txKey)
if #rec == 0 then return {} end
local h = {}
for i = 1, #rec, 2 do h[rec[i]] = rec[i + 1] end

local function dueToStart()
  if h['state'] ~= 'pending' or h['kind'] == 'debit' or h['in_round'] ~= '1' then return false end
  if h['deferred'] == '1' and h['attempts'] == '0' then return false end
  -- Claimed for an inline call that may still be out: the worker's own checks decide when to try.
  if h['attempts'] == '0' and h['queued'] ~= '1' and h['is_compensation'] ~= '1' then return false end
  local inFlight = h['in_flight_until']
  if inFlight ~= nil and inFlight ~= '' and tonumber(inFlight) > now then return false end
  local history = h['history'] or ''
  if history == '' then return true end
  local count, last = 0, nil
  for entry in string.gmatch(history, '[^,]+') do
    count = count + 1
    last = entry
  end
  if last ~= 'u' and not string.find(',' .. plainCodes .. ',', ',' .. last .. ',', 1, true) then return false end
  local outage = last == 'u' or string.find(',' .. outageCodes .. ',', ',' .. last .. ',', 1, true)
  if outage and tonumber(h['updated_at'] or '0') >= healthOkAt then return false end
  local n = 0
  for delay in string.gmatch(delayList, '[^,]+') do
    n = n + 1
    -- Retry `count` (the history holds the first attempt and count - 1 retries) is due at updated_at + its delay.
    if n == count then return tonumber(h['updated_at'] or '0') + tonumber(delay) <= now end
  end
  return false
end

if not (mayStart and dueToStart()) then
  table.insert(rec, 1, 'read')
  return rec
end
local history = h['history'] or ''
redis.call('HSET', txKey, 'updated_at', args[2], 'state', 'pending', 'attempts', tostring(tonumber(h['attempts'] or '0') + 1),
  'history', history == '' and 'u' or (history .. ',u'), 'in_flight_until', inFlightUntil)
redis.call('PERSIST', txKey)
redis.call('ZADD', pendingKey, nextCheckAt, id)
toOutbox(outboxKey, txKey)
table.insert(rec, 1, 'started')
return rec
