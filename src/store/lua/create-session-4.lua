--[[
  A launched session, listed under its wallet token; the token keeps what its terminate will send.
  A token whose terminate was decided takes no new session. The token's keys live at least as long
  as the sessions on it (claims and touches renew them with the sessions).

  A token holds at most `cap` sessions that still exist (TOKEN_SESSION_CAP): every step that walks
  a token's sessions is bounded by it, however often its launch URL is replayed. A full set first
  drops the listed members whose session expired; if it is still full, the launch is refused. The
  caller lists the members (read just before) only once a call without them answered 'full'.

  A wallet being removed from the registry (contract 11) is marked retired on each of its shards
  before its sessions are counted: a launch either created its session before the mark (and is
  counted) or is refused here, never one in between.

  Input:
    KEYS[1] session
    KEYS[2] token
    KEYS[3] token's sessions
    KEYS[4] the wallet's retired mark on this shard
    KEYS[5..] the session key of each listed member of the token's sessions

    ARGV[1] session id
    ARGV[2] session ttl (seconds)
    ARGV[3] token
    ARGV[4] token ref
    ARGV[5] player id
    ARGV[6] site id
    ARGV[7] currency
    ARGV[8] game id
    ARGV[9] balance
    ARGV[10] created at (ms)
    ARGV[11] cap: sessions a token may hold
    ARGV[12..] the listed members (session ids), in the order of KEYS[4..]

  Output: 1 created, 0 refused (the token is terminating or terminated), -1 refused (the token
  holds `cap` sessions), -2 refused (the wallet is retired or being removed)
]]
local sessionKey, tokenKey, tokenSessionsKey, retiredKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local sessionId, ttlSeconds, token, tokenRef = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local playerId, siteId, currency, gameId, balance, createdAt = ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10]
local cap = tonumber(ARGV[11])
local FIRST_LISTED_KEY, FIRST_LISTED_ARG = 5, 12

--- @include "includes/renew-token"
--- @include "includes/listed-keys"

if redis.call('EXISTS', retiredKey) == 1 then return -2 end
if redis.call('HGET', tokenKey, 'state') then return 0 end
if redis.call('SCARD', tokenSessionsKey) >= cap then
  local listed = listedKeys(FIRST_LISTED_KEY, FIRST_LISTED_ARG, #KEYS - FIRST_LISTED_KEY + 1)
  for i, key in ipairs(listed.keys) do
    if redis.call('EXISTS', key) == 0 then redis.call('SREM', tokenSessionsKey, listed.members[i]) end
  end
  if redis.call('SCARD', tokenSessionsKey) >= cap then return -1 end
end
redis.call('HSET', sessionKey, 'token', token, 'token_ref', tokenRef, 'player_id', playerId, 'site_id', siteId,
  'currency', currency, 'game_id', gameId, 'balance', balance, 'state', 'open', 'created_at', createdAt)
redis.call('EXPIRE', sessionKey, ttlSeconds)
redis.call('HSET', tokenKey, 'token', token, 'player_id', playerId, 'site_id', siteId, 'currency', currency, 'game_id', gameId)
redis.call('SADD', tokenSessionsKey, sessionId)
renewToken(tokenKey, tokenSessionsKey, ttlSeconds)
return 1
