--[[
  Functions of a lease: one key holding its holder's token for a while. Included by the
  scripts that take or give back a lease, alone (lease-*.lua) or in the same step as other
  writes (the entity versions, the sweep's fence, the pull's offset). Not run on its own.

  lease_take(key, owner, ms)
    0 when the lease was free and is now owner's for ms; else the ms (at least 1) left on
    the holder's.
  lease_holds(key, owner)
    true when owner holds the lease.
  lease_release(key, owner)
    1 when owner held the lease and gave it back; 0 when it was not theirs (expired, maybe
    taken).
]]
local function lease_take(key, owner, ms)
  if redis.call('SET', key, owner, 'NX', 'PX', ms) then return 0 end
  return math.max(redis.call('PTTL', key), 1)
end
local function lease_holds(key, owner)
  return redis.call('GET', key) == owner
end
local function lease_release(key, owner)
  if not lease_holds(key, owner) then return 0 end
  redis.call('DEL', key)
  return 1
end
