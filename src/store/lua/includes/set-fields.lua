--[[
  Writes the field/value pairs list[from .. to] of a record, and the pairs given after them (none
  empty). An empty value is the record codec's "absent" (src/store/record-codec.ts): its field is
  deleted, not stored.
]]
local function setFields(key, list, from, to, ...)
  local set, gone = {...}, {}
  for i = from, to - 1, 2 do
    if list[i + 1] == '' then
      gone[#gone + 1] = list[i]
    else
      set[#set + 1] = list[i]
      set[#set + 1] = list[i + 1]
    end
  end
  if #set > 0 then redis.call('HSET', key, unpack(set)) end
  if #gone > 0 then redis.call('HDEL', key, unpack(gone)) end
end
