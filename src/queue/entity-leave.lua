--[[
  After delivering a state of an entity: records it as delivered when received, and gives
  the lease back, in one step. The version only moves forward: should the lease have
  expired and another delivery have recorded a newer state meanwhile, that one stays.

  Input:
    KEYS[1..7] as entity-enter.lua
    ARGV[1] entity
    ARGV[2] owner
    ARGV[3] received: '1' (a 2xx), '2' (no answer: the route may have it, and the state's own
            retry must still go: tagged) or '0' (a non-2xx answer: nothing recorded)
    ARGV[4] the state's age (ms)
    ARGV[5] change: 'c', 'd' or 'u'
    ARGV[6] the current window's expiry (unix seconds)
    ARGV[7] the state's tag (its event's; entity-versions.ts)

  Output:
    1 the lease was ours and is given back; 0 it had expired
]]
--- @include "entity-versions.lua"
--- @include "../redis/lease.lua"
if ARGV[3] ~= '0' then
  local current = stored(ARGV[1])
  local version = next_version(current, tonumber(ARGV[4]), ARGV[5])
  -- A re-run of the state recorded keeps its version (a delete's may be above its own age).
  if not version and tagged(ARGV[1], current) == ARGV[7] then version = current end
  if version then
    redis.call('HSET', KEYS[3], ARGV[1], string.format('%d', version))
    redis.call('EXPIREAT', KEYS[3], ARGV[6])
    -- Only a delete's retry needs it: a create's or an update's passes "age >= current".
    if ARGV[3] == '2' and ARGV[5] == 'd' then
      redis.call('HSET', KEYS[6], ARGV[1], string.format('%d:%s', version, ARGV[7]))
      redis.call('EXPIREAT', KEYS[6], ARGV[6])
    end
  end
end
return lease_release(KEYS[1], ARGV[2])
