--[[
  Takes the lease when it is free.

  Input:
    KEYS[1] the lease
    ARGV[1] owner
    ARGV[2] lease ms

  Output:
    0 taken; else the ms (at least 1) until the holder's lease ends
]]
--- @include "lease.lua"
return lease_take(KEYS[1], ARGV[1], ARGV[2])
