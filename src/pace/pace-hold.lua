--[[
  Holds every call of the pace for a while (after a 429), unless a longer hold is already on.

  Input:
    KEYS[1] the hold
    ARGV[1] ms

  Output:
    0
]]
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
end
return 0
