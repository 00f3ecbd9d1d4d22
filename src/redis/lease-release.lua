--[[
  Gives the owner's lease back.

  Input:
    KEYS[1] the lease
    ARGV[1] owner

  Output:
    1 given back; 0 no longer the owner's
]]
--- @include "lease.lua"
return lease_release(KEYS[1], ARGV[1])
