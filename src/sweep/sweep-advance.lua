--[[
  Moves a stream's checkpoint forward, only while the owner holds the sweep's lease. Never
  moves it back: a late write of an older window must not undo a newer one.

  Input:
    KEYS[1] the sweep's lease
    KEYS[2] the stream's hash (field `checkpoint`, ms)
    KEYS[3] the set of swept streams
    ARGV[1] owner
    ARGV[2] the window's end (ms)
    ARGV[3] the stream's id

  Output:
    1 written (or already further); 0 not the holder (nothing written)
]]
--- @include "../redis/lease.lua"
if not lease_holds(KEYS[1], ARGV[1]) then return 0 end
local current = tonumber(redis.call('HGET', KEYS[2], 'checkpoint') or '0')
if tonumber(ARGV[2]) > current then redis.call('HSET', KEYS[2], 'checkpoint', ARGV[2]) end
redis.call('SADD', KEYS[3], ARGV[3])
return 1
