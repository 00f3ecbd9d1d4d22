--[[
  Moves the pace by what one answer of the tenant showed: additive increase while it shows
  room, multiplicative decrease when the room shrinks or on a 429 (at most one cut per
  ARGV[7] ms). The pace follows what the tenant shows now, so no reading of the past can
  keep it low.

  Input:
    KEYS[1] the pace (a hash: rate, grownAt, cutAt)
    KEYS[2] the interval pace-take.lua reads
    ARGV[1] verdict: 'room', 'short', 'refused' or another (held)
    ARGV[2] ceiling (calls/s; 0 when none is shown)
    ARGV[3] the starting rate (calls/s)
    ARGV[4] growth (part of the ceiling per second)
    ARGV[5] the cut factor when the room shrinks
    ARGV[6] the cut factor on a 429
    ARGV[7] the least time between two cuts (ms)
    ARGV[8] the lowest pace (calls/s)
    ARGV[9] how long the pace is kept without answers (ms)

  Output:
    {rate, step}: the new rate ('%.4f') and 'grew', 'cut' or 'held'
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local verdict = ARGV[1]
local ceiling = tonumber(ARGV[2])
local rate = tonumber(redis.call('HGET', KEYS[1], 'rate') or ARGV[3])
local grownAt = tonumber(redis.call('HGET', KEYS[1], 'grownAt') or now)
local cutAt = tonumber(redis.call('HGET', KEYS[1], 'cutAt') or '0')
local lowest = tonumber(ARGV[8])
if ceiling > 0 then
  lowest = math.min(lowest, ceiling)
  if rate > ceiling then rate = ceiling end
end
local step = 'held'
if verdict == 'room' and ceiling > 0 and rate < ceiling then
  rate = math.min(ceiling, rate + ceiling * tonumber(ARGV[4]) * math.min(now - grownAt, 1000) / 1000)
  step = 'grew'
elseif (verdict == 'short' or verdict == 'refused') and now - cutAt >= tonumber(ARGV[7]) then
  local factor = ARGV[5]
  if verdict == 'refused' then factor = ARGV[6] end
  rate = math.max(lowest, rate * tonumber(factor))
  cutAt = now
  step = 'cut'
end
grownAt = now
local ttl = tonumber(ARGV[9])
redis.call('HSET', KEYS[1], 'rate', string.format('%.4f', rate), 'grownAt', grownAt, 'cutAt', cutAt)
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('SET', KEYS[2], string.format('%.1f', math.ceil(10000 / rate) / 10), 'PX', ttl)
return { string.format('%.4f', rate), step }
