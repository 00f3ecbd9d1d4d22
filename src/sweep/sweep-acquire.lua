--[[
  Starts a sweep only when both let it: no "not before" key, and the sweep's lease taken.

  Input:
    KEYS[1] the sweep's lease
    KEYS[2] the "not before" key (set while a sweep is not due)
    ARGV[1] owner
    ARGV[2] lease ms
    ARGV[3] interval ms (0: no "not before" key is set)

  Output:
    1 this owner sweeps now; 0 not due, or another holds the lease
]]
--- @include "../redis/lease.lua"
if redis.call('EXISTS', KEYS[2]) == 1 or lease_take(KEYS[1], ARGV[1], ARGV[2]) > 0 then return 0 end
if tonumber(ARGV[3]) > 0 then redis.call('SET', KEYS[2], '1', 'PX', ARGV[3]) end
return 1
