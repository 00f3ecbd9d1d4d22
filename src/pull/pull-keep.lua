--[[
  Keeps the pull's offset, only while the owner holds the pull's lease.

  Input:
    KEYS[1] the pull's lease
    KEYS[2] the position (a hash: offset, offsetAt, lastEventAt)
    ARGV[1] owner
    ARGV[2] offset
    ARGV[3] offsetAt (ISO 8601)
    ARGV[4] lastEventAt (ISO 8601; '' keeps the last one)

  Output:
    1 kept; 0 not the holder (nothing written)
]]
--- @include "../redis/lease.lua"
if not lease_holds(KEYS[1], ARGV[1]) then return 0 end
redis.call('HSET', KEYS[2], 'offset', ARGV[2], 'offsetAt', ARGV[3])
if ARGV[4] ~= '' then redis.call('HSET', KEYS[2], 'lastEventAt', ARGV[4]) end
return 1
