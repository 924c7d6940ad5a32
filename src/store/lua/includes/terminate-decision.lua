--[[
  The decision to terminate a wallet token (contract 5.6), taken atomically with the claims of
  that token (the claim refuses new wins and refunds once the token's state is set): every session
  launched on the token has ended (its `end` accepted) or expired, no record of the token is
  pending or dead, and none of its debits is being compensated. Taking it also takes the send lease
  of the terminate.

  The send also waits while a debit of the token is watched (its compensation found it never
  applied; it is re-checked until its window ends): the wallet may still apply it late, and can
  roll it back only while the token lives. Asking `status` right before the terminate would leave
  the moment between that answer and the terminate open (the soak found a debit applied in it).

  Returns 'terminate' (decided now or earlier, lease taken), 'busy' (decided, another sender holds
  the lease), 'wait_work' (a record of the token is pending or dead, a debit of it is being
  compensated, or one is watched) or 'wait_sessions' (another session on the token still plays: its own end, or its
  expiry, decides). With 'wait_sessions' comes when the sweeper should look again: `recheckAt`, or
  the moment the soonest-expiring open session expires if that is earlier (a session whose launch
  answer was lost is never ended by the engine: its expiry releases the token on time).

  The token's sessions and its pending records are passed in KEYS (read by the caller just before;
  a caller whose lists are no longer the whole sets answers 'stale' and is called again), so the
  step touches only keys it was given.
]]

--[[
  How many records still hold the token. A member that can never give its hold back is dropped
  first: its record gone (removed by hand, or lost with a primary), or no longer pending,
  compensating or dead. Such a member is left by a process of an earlier release that settled a
  compensation without knowing the debit being compensated holds its token (includes/debit-state).
  `pending` lists the whole set (includes/listed-keys): its members and their records' keys.
]]
local function tokenHolds(tokenPendingKey, pending)
  local held = #pending.members
  for i, recordKey in ipairs(pending.keys) do
    local state = redis.call('HGET', recordKey, 'state')
    if state ~= 'pending' and state ~= 'compensating' and state ~= 'dead' then
      redis.call('SREM', tokenPendingKey, pending.members[i])
      held = held - 1
    end
  end
  return held
end

--[[
  `sessions` lists the whole set of the token's sessions (includes/listed-keys), at most
  TOKEN_SESSION_CAP of them (create-session-4.lua): the walk is bounded however often the token was
  launched.
]]
local function takeTerminate(tokenKey, tokenSessionsKey, tokenPendingKey, tokenWatchKey, sessions, pending, now, leaseUntil, recheckAt)
  local state = redis.call('HGET', tokenKey, 'state')
  if not state then
    if tokenHolds(tokenPendingKey, pending) > 0 then return 'wait_work' end
    local open, lookAt = false, tonumber(recheckAt)
    for i, sessionKey in ipairs(sessions.keys) do
      local sessionState = redis.call('HGET', sessionKey, 'state')
      -- An expired session counts as ended.
      if not sessionState then
        redis.call('SREM', tokenSessionsKey, sessions.members[i])
      elseif sessionState == 'open' then
        open = true
        local ttl = redis.call('PTTL', sessionKey)
        if ttl >= 0 then lookAt = math.min(lookAt, tonumber(now) + ttl + 1) end
      end
    end
    if open then return 'wait_sessions', lookAt end
    redis.call('HSET', tokenKey, 'state', 'terminating', 'from', now, 'attempts', 0)
    -- Kept until the terminate went out (or was given up and driven again).
    redis.call('PERSIST', tokenKey)
    redis.call('PERSIST', tokenSessionsKey)
  elseif tonumber(redis.call('HGET', tokenKey, 'lease') or '0') > tonumber(now) then
    return 'busy'
  elseif tokenHolds(tokenPendingKey, pending) > 0 then
    -- Decided, but the background started work of the token since (a debit found applied late
    -- is rolled back first): never send the terminate under pending work.
    return 'wait_work'
  end
  if redis.call('SCARD', tokenWatchKey) > 0 then return 'wait_work' end
  redis.call('HSET', tokenKey, 'lease', leaseUntil)
  -- The terminate's retry window starts with its first send, not with the decision: waiting for
  -- work or a watched debit must not use it up.
  if redis.call('HINCRBY', tokenKey, 'attempts', 1) == 1 then redis.call('HSET', tokenKey, 'from', now) end
  return 'terminate'
end
