--[[
  Functions of the entity versions, included by entity-enter.lua and entity-leave.lua.
  Not run on its own. The calling script's KEYS[2..4] are the previous, current and next
  window's hash of versions, KEYS[5..7] the same windows' hash of tags.

  A tag names the delete whose state was recorded without an answer (a timeout, a reset: the
  route may have it, so nothing older may follow), as `<version>:<tag>`, so that event's own
  retry still goes. It counts only while its version is the entity's newest. Versions stay
  plain numbers, as every release reads them.

  A version is the state's age in ms, negated once the entity is deleted. Versions only
  move forward in one order, by absolute value, a delete winning a tie (see next_version),
  so the newest of several windows is the latest written.

  newest(a, b)          the newer of two versions (either may be nil)
  stored(field)         the newest version of an entity over the three windows, or nil
  tagged(field, version) the tag recorded with this version of the entity, or nil
  next_version(current, age, change)
                        the version to keep once this state is delivered, or nil when it
                        is stale (change: 'c' created, 'd' deleted, 'u' changed)
]]
local function newest(a, b)
  if not a then return b end
  if not b then return a end
  local x, y = math.abs(a), math.abs(b)
  if x ~= y then return (x > y) and a or b end
  return math.min(a, b)
end
local function stored(field)
  local version = nil
  for i = 2, 4 do
    local raw = redis.call('HGET', KEYS[i], field)
    if raw then version = newest(version, tonumber(raw)) end
  end
  return version
end
local function tagged(field, version)
  if not version then return nil end
  for i = 5, 7 do
    local raw = redis.call('HGET', KEYS[i], field)
    if raw then
      local digits, tag = string.match(raw, '^(%-?%d+):(.*)$')
      if tonumber(digits) == version then return tag end
    end
  end
  return nil
end
-- The version to keep once this state is delivered, or nil when it is stale:
-- - nothing known yet: it goes;
-- - deleted: a create newer than the delete goes (the id lives again: social and
--   custom-database users keep their user_id when re-created), and so does a newer delete
--   (the id was re-created and deleted again: its create may still be on its way, and
--   must then find this delete as the newest state); updates never do, whatever their
--   time, since delivering one would bring a deleted user back downstream;
-- - alive: a delete always goes (the newest state), anything else unless it is older.
local function next_version(current, age, change)
  if not current then
    if change == 'd' then return -age end
    return age
  end
  if current < 0 then
    if change == 'c' and age > -current then return age end
    if change == 'd' and age > -current then return -age end
    return nil
  end
  if change == 'd' then return -math.max(current, age) end
  if age >= current then return age end
  return nil
end
