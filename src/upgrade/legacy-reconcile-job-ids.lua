--[[
  Moves the reconcile queue's job id counter a million past the earlier layout's, unless
  it is already past it, so ids given out by an earlier release do not name another job.

  Input:
    KEYS[1] the reconcile queue's id counter (new place)
    ARGV[1] the old counter's value

  Output:
    0
]]
if tonumber(redis.call('GET', KEYS[1]) or '0') < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], tonumber(ARGV[1]) + 1000000) end
return 0
