--[[
  On the new queue's slot: a dead letter of the earlier layout as it was (its hash whole,
  scored by when it failed), unless the queue already has a job of that id (then that job
  is the event's).

  Input:
    KEYS[1] the job's hash in the new queue
    KEYS[2] the new queue's failed set
    ARGV[1] job id
    ARGV[2] failed at (ms, the score)
    ARGV[3..] field, value, ... (the job's hash)

  Output:
    1 copied; 0 the queue already had a job of that id
]]
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
return 1
