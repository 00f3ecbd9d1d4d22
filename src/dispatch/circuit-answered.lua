--[[
  After the downstream answered (2xx, or a 4xx that is no outage): closes the circuit.

  Input:
    KEYS[1] the route's circuit (as circuit-admit.lua)

  Output:
    how long it was open (ms), or -1 when it was not
]]
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local openedAt = redis.call('HGET', KEYS[1], 'openedAt')
redis.call('DEL', KEYS[1])
if openedAt then return now - tonumber(openedAt) end
return -1
