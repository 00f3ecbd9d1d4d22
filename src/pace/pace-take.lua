--[[
  Reserves the next call's slot of the shared pace: every process pacing through these keys
  shares one pace, so three workers still make their share in all, not three times it.
  Times are ms since the epoch on Redis's clock, to a tenth of a ms: tenths keep a pace of
  47.5/s from rounding down to 45/s; 13 digits of ms and one decimal stay exact through
  Lua's number-to-string conversion (14 digits). No slot is reserved further ahead than
  ARGV[2] ms (or two intervals): a slot keeps the interval it was reserved at, so fifty
  callers reserving at a slow start pace would hold it for seconds after the pace rose.

  Input:
    KEYS[1] the next free slot
    KEYS[2] the hold (its PTTL is what is left of it)
    KEYS[3] the interval (ms, to a tenth)
    ARGV[1] the interval when none is set (ms, to a tenth)
    ARGV[2] how far ahead a slot may be reserved (ms)

  Output:
    ms to wait before the call (0 or more: the slot is reserved); a negative number: ask
    again after that many ms, nothing is reserved
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local interval = tonumber(redis.call('GET', KEYS[3]) or ARGV[1])
local start = math.max(now, tonumber(redis.call('GET', KEYS[1]) or '0'))
local held = redis.call('PTTL', KEYS[2])
if held > 0 then start = math.max(start, now + held) end
local ahead = math.max(tonumber(ARGV[2]), 2 * interval)
if start - now > ahead then return -math.ceil(start - now - ahead) end
local after = start + interval
redis.call('SET', KEYS[1], string.format('%.1f', after), 'PX', math.ceil(after - now) + 1000)
return math.ceil(start - now)
