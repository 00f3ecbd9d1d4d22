--[[
  After a retryable failure: counts it, and opens the circuit at the threshold; while open,
  a failed probe doubles the probe interval up to its most.

  Input:
    KEYS[1] the route's circuit (as circuit-admit.lua)
    ARGV[1] failures in a row that open the circuit
    ARGV[2] the first probe interval (ms)
    ARGV[3] the longest probe interval (ms)
    ARGV[4] '1' when this delivery was the probe, else '0'

  Output:
    {0, 0, failures}   still closed
    {1, ms, failures}  open already: ms until the next probe
    {2, ms, failures}  opened now: ms until the first probe
]]
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local failures = redis.call('HINCRBY', KEYS[1], 'failures', 1)
if redis.call('HEXISTS', KEYS[1], 'openedAt') == 1 then
  if ARGV[4] == '1' then
    local probeMs = math.min(tonumber(redis.call('HGET', KEYS[1], 'probeMs')) * 2, tonumber(ARGV[3]))
    redis.call('HSET', KEYS[1], 'probeMs', probeMs, 'nextProbeAt', now + probeMs)
  end
  return {1, math.max(tonumber(redis.call('HGET', KEYS[1], 'nextProbeAt')) - now, 0), failures}
end
if failures >= tonumber(ARGV[1]) then
  redis.call('HSET', KEYS[1], 'openedAt', now, 'probeMs', ARGV[2], 'nextProbeAt', now + tonumber(ARGV[2]))
  return {2, tonumber(ARGV[2]), failures}
end
return {0, 0, failures}
