--[[
  Deletes a record's wallet body (`body`, `body1`, `body2`, ...): whatever gets the retention expiry
  can never be sent again, and the body is about a third of the record.
]]
local function dropBody(key)
  if redis.call('HDEL', key, 'body') == 0 then return end
  local piece = 1
  while redis.call('HDEL', key, 'body' .. piece) == 1 do piece = piece + 1 end
end
