--[[
  Drops this process's lease on the embedded Redis and answers the rest in one step, so
  two processes leaving at once cannot both miss each other.

  Input:
    KEYS[1] the users hash (process -> lease)
    ARGV[1] this process's field

  Output:
    the users left (HGETALL: a flat list in RESP2, a map in RESP3)
]]
redis.call('HDEL', KEYS[1], ARGV[1])
return redis.call('HGETALL', KEYS[1])
