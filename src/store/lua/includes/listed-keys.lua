--[[
  Keys a caller read from a set just before the call and lists after the script's named keys
  (KEYS[firstKey..]), with their members (ARGV[firstArg..], in the same order): a script touches
  only keys passed in KEYS. `listedKeys` returns `{keys = …, members = …}`; `listsWholeSet` says
  whether the members are the set as it is now (a set that changed since is read again by the
  caller).
]]
local function listedKeys(firstKey, firstArg, count)
  local listed = {keys = {}, members = {}}
  for i = 1, count do
    local key, member = KEYS[firstKey + i - 1], ARGV[firstArg + i - 1]
    listed.keys[i], listed.members[i] = key, member
  end
  return listed
end

local function listsWholeSet(setKey, members)
  if redis.call('SCARD', setKey) ~= #members then return false end
  for _, member in ipairs(members) do
    if redis.call('SISMEMBER', setKey, member) == 0 then return false end
  end
  return true
end
