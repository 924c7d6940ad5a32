--[[
  Records how a terminate ended.
  - terminated: the token is deactivated (or the wallet refused for good): every session on it is
    ended, and the token's keys expire after the retention. The sessions come in as KEYS (read by
    the caller just before, at most TOKEN_SESSION_CAP of them: includes/listed-keys); a set that
    changed since is answered 'stale', nothing written, and the caller reads it again.
  - retry: the send lease is given back; the job tries again.
  - given_up: the window passed: listed for operators; a repeated `end` drives it again.

  Input:
    KEYS[1] token
    KEYS[2] token's sessions
    KEYS[3] ending index
    KEYS[4] terminate-failed index
    KEYS[5..] the session key of each member of the token's sessions (with `terminated`)

    ARGV[1] token ref
    ARGV[2] outcome: terminated | retry | given_up
    ARGV[3] retention (seconds)
    ARGV[4] now (ms)
    ARGV[5] the wallet's code, or '' (unknown outcome)
    ARGV[6] balance after the terminate, or ''
    ARGV[7..] the listed session ids, in the order of KEYS[5..]

  Output: 1, or 'stale'
]]
local tokenKey, tokenSessionsKey, endingKey, terminateFailedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local tokenRef, outcome, retentionSeconds = ARGV[1], ARGV[2], ARGV[3]
local now, code, balance = ARGV[4], ARGV[5], ARGV[6]
local FIRST_LISTED_KEY, FIRST_LISTED_ARG = 5, 7

--- @include "includes/listed-keys"

local sessions = listedKeys(FIRST_LISTED_KEY, FIRST_LISTED_ARG, #KEYS - FIRST_LISTED_KEY + 1)
if outcome == 'terminated' and not listsWholeSet(tokenSessionsKey, sessions.members) then return 'stale' end
redis.call('HSET', tokenKey, 'lease', 0, 'last_code', code, 'updated_at', now)
if outcome == 'terminated' then
  redis.call('HSET', tokenKey, 'state', 'terminated')
  for _, sessionKey in ipairs(sessions.keys) do
    if redis.call('EXISTS', sessionKey) == 1 then
      redis.call('HSET', sessionKey, 'state', 'ended')
      if balance ~= '' then redis.call('HSET', sessionKey, 'balance', balance) end
      redis.call('EXPIRE', sessionKey, retentionSeconds)
    end
  end
  redis.call('EXPIRE', tokenKey, retentionSeconds)
  redis.call('EXPIRE', tokenSessionsKey, retentionSeconds)
  redis.call('ZREM', endingKey, tokenRef)
  redis.call('ZREM', terminateFailedKey, tokenRef)
elseif outcome == 'given_up' then
  redis.call('ZREM', endingKey, tokenRef)
  redis.call('ZADD', terminateFailedKey, now, tokenRef)
end
return 1
