--[[
  The delivery's own op, `finish`: a delivered job's completion and its mark in one atomic
  step. Included by the finish script (finish-script.ts) after ledger-core.lua and BullMQ's
  moveToFinished, before ledger-dispatch.lua; it defines `finish` and the script's `run`.

  finish() reads KEYS: the shard's window of buckets (as a `mark`: the record is found in
  whichever holds it, most often the newest, read first), then BullMQ's 14 keys of
  moveToFinished; ARGV: finish, field, now, ttl, bucket length (as every ledger op), route,
  at, mark (2 delivered), then BullMQ's arguments of moveToFinished as BullMQ built them.
  It answers { 1 (marked), moveToFinished's reply }.

  The mark first: a 2xx happened, so it stands even when BullMQ refuses the completion (a
  lock lost to a stall): the job's next run reads it and does not send the event again.
]]
local function finish()
  local marked = markRoute(false)
  local keys, args = {}, {}
  for x = 1, kc - n do keys[x] = KEYS[kb + n + x] end
  for x = 9, ac do args[x - 8] = ARGV[ab + x] end
  -- nil would end the reply here; false is a nil reply, as moveToFinished's own nil.
  local moved = moveToFinished(keys, args)
  if moved == nil then moved = false end
  return { marked, moved }
end
local function run()
  if op == 'finish' then return finish() end
  return ledgerOp()
end
