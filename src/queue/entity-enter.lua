--[[
  Before delivering a state of an entity to a dropStale route: tells a stale state, else
  takes the entity's lease. Stale is told before the lease is looked at: versions only
  move forward, so a state older than the one recorded stays stale whatever the holder
  delivers, and need not wait for it.

  Input:
    KEYS[1] the entity's lease
    KEYS[2] the previous window's versions (a hash: entity -> version)
    KEYS[3] the current window's versions
    KEYS[4] the next window's versions
    KEYS[5..7] the previous, current and next window's tags (entity-versions.lua)
            (one hash tag, one slot)
    ARGV[1] entity
    ARGV[2] owner
    ARGV[3] lease ms
    ARGV[4] the state's age (ms)
    ARGV[5] change: 'c' created, 'd' deleted, 'u' changed
    ARGV[6] the state's tag (its event's; entity-versions.ts)

  Output:
    0 go (the lease is ours); -1 stale; else the ms left on another's lease
]]
--- @include "entity-versions.lua"
--- @include "../redis/lease.lua"
-- Stale, unless the state recorded is this very one (an attempt with no answer records it): it goes again.
local current = stored(ARGV[1])
if not next_version(current, tonumber(ARGV[4]), ARGV[5]) and tagged(ARGV[1], current) ~= ARGV[6] then return -1 end
return lease_take(KEYS[1], ARGV[2], ARGV[3])
