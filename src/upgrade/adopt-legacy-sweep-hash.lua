--[[
  Copies an earlier release's sweep hash of one stream into the new one, field by field.
  Fields the new hash already has win: a sweep of this release may have moved on meanwhile.

  Input:
    KEYS[1] the stream's hash under the sweep's own hash tag
    ARGV    field, value, field, value, ... (the old hash)

  Output:
    0
]]
for i = 1, #ARGV, 2 do redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1]) end
return 0
