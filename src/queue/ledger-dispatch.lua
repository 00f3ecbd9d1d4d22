--[[
  The end of the ledger's script and of the admission's: runs one op, or a batch, with the
  `run` defined before it. Included by ledger.lua and by the admission's script
  (admission-script.ts), last.

  Input:
    one op's KEYS and ARGV (ledger-core.lua), or ARGV 'batch', the op count, then per op
    its key count, its argument count and its arguments, KEYS holding every op's keys in turn

  Output:
    the op's reply; a batch: each op's reply in its order (an error as that op's reply,
    not the batch's)
]]
if ARGV[1] ~= 'batch' then
  start(0, #KEYS, 0, #ARGV)
  return run()
end
local replies = {}
local nextKey, nextArg = 1, 3
for j = 1, tonumber(ARGV[2]) do
  local keyCount, argCount = tonumber(ARGV[nextArg]), tonumber(ARGV[nextArg + 1])
  nextArg = nextArg + 2
  start(nextKey - 1, keyCount, nextArg - 1, argCount)
  nextKey, nextArg = nextKey + keyCount, nextArg + argCount
  local ok, reply = pcall(run)
  if not ok then reply = { err = type(reply) == 'table' and reply.err or tostring(reply) } end
  -- nil would end the reply array here; false is a nil reply.
  if reply == nil then reply = false end
  replies[j] = reply
end
return replies
