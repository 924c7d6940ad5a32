--[[
  Deletes a record's wallet body (`body`, `body1`, `body2`, ...): whatever gets the retention expiry
  can never be sent again, and the body is about a third of the record. `pieces`: how many pieces
  the caller expects (0 or nil: unknown). Those, and one more, go in one HDEL; only a record with
  more pieces than that (the guess was short) is walked on, a piece an HDEL, until a miss.
]]
local function dropBody(key, pieces)
  local names = {'body'}
  for piece = 1, tonumber(pieces or 0) do names[#names + 1] = 'body' .. piece end
  local asked = #names
  if redis.call('HDEL', key, unpack(names)) < asked then return end
  local piece = asked
  while redis.call('HDEL', key, 'body' .. piece) == 1 do piece = piece + 1 end
end
