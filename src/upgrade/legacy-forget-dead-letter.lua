--[[
  On the old slot: forgets the job only while it is still a dead letter there (an earlier
  release's replay may have taken it back to its queue meanwhile).

  Input:
    KEYS[1] the old queue's failed set
    KEYS[2] the job's hash
    KEYS[3] the job's logs
    ARGV[1] job id

  Output:
    0
]]
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then redis.call('DEL', KEYS[2], KEYS[3]) end
return 0
