/**
 * The bench reference's claim (bench/reference-server.ts; bench/redis-cost.ts runs it too): claims
 * the id (SET NX) and returns the session in the same round trip: 0 = no session, 1 = duplicate.
 * KEYS: session, transaction; ARGV: the request, the record's expiry (seconds).
 */
export const REFERENCE_CLAIM = `
local session = redis.call('GET', KEYS[1])
if not session then return {0} end
if not redis.call('SET', KEYS[2], ARGV[1], 'NX', 'EX', ARGV[2]) then return {1} end
return {2, session}`;
