--[[
  The decision to terminate a wallet token (contract 5.6), taken atomically with the claims of
  that token (the claim refuses new wins and refunds once the token's state is set): every session
  launched on the token has ended (its `end` accepted) or expired, and no credit or rollback of the
  token is pending or dead. Taking it also takes the send lease of the terminate.

  Returns 'terminate' (decided now or earlier, lease taken), 'busy' (decided, another sender holds
  the lease), 'wait_work' (a credit or rollback of the token is pending or dead), 'wait_sessions'
  (another session on the token still plays: its own end, or its expiry, decides) or, for a caller
  that cannot ask about watched debits (`withWatch` false), 'watch_first': decided, but a watched
  debit of the token must be asked about right before each terminate attempt (the wallet answers
  for the token only until it is terminated, and may still apply the debit until then).
]]
local function takeTerminate(tokenKey, tokenSessionsKey, tokenPendingKey, tokenWatchKey, sessionPrefix, now, leaseUntil, withWatch)
  local state = redis.call('HGET', tokenKey, 'state')
  if not state then
    if redis.call('SCARD', tokenPendingKey) > 0 then return 'wait_work' end
    for _, sessionId in ipairs(redis.call('SMEMBERS', tokenSessionsKey)) do
      local sessionState = redis.call('HGET', sessionPrefix .. sessionId, 'state')
      -- An expired session counts as ended.
      if not sessionState then
        redis.call('SREM', tokenSessionsKey, sessionId)
      elseif sessionState == 'open' then
        return 'wait_sessions'
      end
    end
    redis.call('HSET', tokenKey, 'state', 'terminating', 'from', now, 'attempts', 0)
    -- Kept until the terminate went out (or was given up and driven again).
    redis.call('PERSIST', tokenKey)
    redis.call('PERSIST', tokenSessionsKey)
  elseif tonumber(redis.call('HGET', tokenKey, 'lease') or '0') > tonumber(now) then
    return 'busy'
  elseif redis.call('SCARD', tokenPendingKey) > 0 then
    -- Decided, but the background started work of the token since (a debit found applied late
    -- is rolled back first): never send the terminate under pending work.
    return 'wait_work'
  end
  if not withWatch and redis.call('SCARD', tokenWatchKey) > 0 then return 'watch_first' end
  redis.call('HSET', tokenKey, 'lease', leaseUntil)
  redis.call('HINCRBY', tokenKey, 'attempts', 1)
  return 'terminate'
end
