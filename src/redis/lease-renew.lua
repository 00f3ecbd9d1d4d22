--[[
  Extends the owner's lease.

  Input:
    KEYS[1] the lease
    ARGV[1] owner
    ARGV[2] lease ms

  Output:
    1 extended; 0 no longer the owner's (expired, maybe taken)
]]
--- @include "lease.lua"
if not lease_holds(KEYS[1], ARGV[1]) then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
