--[[
  Before a delivery: may the route's job go? Times from Redis's clock, so processes on
  different hosts agree; atomic, so exactly one job claims each probe.

  Input:
    KEYS[1] the route's circuit (a hash: failures, and while open openedAt, probeMs,
            nextProbeAt)

  Output:
    {0, failures}      closed: go
    {1, ms}            open: wait ms until the next probe
    {2, 0}             open, and this job is the probe: go
]]
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local s = redis.call('HMGET', KEYS[1], 'failures', 'openedAt', 'nextProbeAt', 'probeMs')
if not s[2] then return {0, tonumber(s[1]) or 0} end
local nextProbeAt = tonumber(s[3])
if now >= nextProbeAt then
  redis.call('HSET', KEYS[1], 'nextProbeAt', now + tonumber(s[4]))
  return {2, 0}
end
return {1, nextProbeAt - now}
