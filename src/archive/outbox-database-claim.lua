--[[
  The database an outbox is archived to: taken when no writer holds it, kept by a writer
  of the same database, refused to one of another.

  Input:
    KEYS[1] the outbox's database key
    ARGV[1] this writer's database id
    ARGV[2] its description: the id, a space, then what names it in logs
    ARGV[3] how long the claim lasts without being renewed (s)

  Output:
    nil when this writer's database holds the claim (renewed), else the holder's description
]]
local held = redis.call('GET', KEYS[1])
if held and string.sub(held, 1, #ARGV[1] + 1) ~= ARGV[1] .. ' ' then return held end
redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
return false
