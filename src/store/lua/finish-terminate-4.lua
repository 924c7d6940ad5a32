--[[
  Records how a terminate ended.
  - terminated: the token is deactivated (or the wallet refused for good): every session on it is
    ended, and the token's keys expire after the retention.
  - retry: the send lease is given back; the job tries again.
  - given_up: the window passed: listed for operators; a repeated `end` drives it again.

  Input:
    KEYS[1] token
    KEYS[2] token's sessions
    KEYS[3] ending index
    KEYS[4] terminate-failed index

    ARGV[1] token ref
    ARGV[2] session key prefix
    ARGV[3] outcome: terminated | retry | given_up
    ARGV[4] retention (seconds)
    ARGV[5] now (ms)
    ARGV[6] the wallet's code, or '' (unknown outcome)
    ARGV[7] balance after the terminate, or ''

  Output: 1
]]
local tokenKey, tokenSessionsKey, endingKey, terminateFailedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local tokenRef, sessionPrefix, outcome, retentionSeconds = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local now, code, balance = ARGV[5], ARGV[6], ARGV[7]

redis.call('HSET', tokenKey, 'lease', 0, 'last_code', code, 'updated_at', now)
if outcome == 'terminated' then
  redis.call('HSET', tokenKey, 'state', 'terminated')
  for _, sessionId in ipairs(redis.call('SMEMBERS', tokenSessionsKey)) do
    local sessionKey = sessionPrefix .. sessionId
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
