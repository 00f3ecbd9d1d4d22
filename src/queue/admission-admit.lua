--[[
  The admission's own op, `admit`: a new id stored in one atomic step (the ledger's check,
  every route's job, the archive's outbox entry, then the ledger's claim). Included by the
  admission's script (admission-script.ts) after ledger-core.lua and BullMQ's add scripts,
  before ledger-dispatch.lua; it defines `admit` and the script's `run`.

  admit() reads KEYS: the shard's window of buckets, then 9 keys per job (BullMQ's add
  script's), then the outbox stream when the archive is on; ARGV: admit, field, now, ttl,
  bucket length, receivedAt, origin, type, stream, the route count m, the m route names,
  then per job its script (`s` standard, `p` prioritized) and BullMQ's 3 arguments, then
  the outbox entry's fields and values if any (archive-record.ts `outboxFields`). It answers 0 stored; 1 a duplicate
  (counted in its record, nothing else written); 2 the record holds route deliveries but
  no arrival (nothing written: the caller stores the event the long way with `recheck`);
  3 a finished job holds a job's id (nothing written: the caller stores the event the long
  way, which gives that job an id of its own: fan-out.ts).
]]
-- A finished job (a dead letter, or a delivered job still kept) under the id of the job
-- BullMQ's arguments `packed` add: an earlier arrival's, whose id the ledger forgot (older
-- than the TTL). BullMQ's add would skip the job, and this arrival reach that route never.
-- Its first packed argument is the queue's key prefix, its second the job id (BullMQ's add
-- script's header).
local function finishedJobHolds(packed)
  local args = cmsgpack.unpack(packed)
  local queue, id = args[1], args[2]
  return redis.call('ZSCORE', queue .. 'failed', id) or redis.call('ZSCORE', queue .. 'completed', id)
end
local function admit()
  local receivedAt = tonumber(ARGV[ab + 6])
  local i, r = find(true)
  if r and bit.band(r.flags, 1) ~= 0 then
    r.dups = math.min(r.dups + 1, 255)
    r.lastDup = receivedAt
    write(i, r)
    return 1
  end
  if r then return 2 end
  local m = tonumber(ARGV[ab + 10])
  -- Before any write, as the refusal below: answering 3 leaves everything as it was. The
  -- jobs counted by their keys (9 each; the outbox's one key makes no job), so a call with
  -- fewer jobs than routes (the ledger's tests) checks those it has. A job's BullMQ
  -- arguments follow its script's letter.
  for j = 0, math.floor((kc - n) / 9) - 1 do
    if finishedJobHolds(ARGV[ab + 12 + m + 4 * j]) then return 3 end
  end
  local fields = { 's' .. ARGV[ab + 8], 's' .. ARGV[ab + 9] }
  for k = 11, 10 + m do fields[#fields + 1] = 'r' .. ARGV[ab + k] end
  -- The names first: the one step that can refuse (a full dictionary) runs before any job is added.
  local indices = intern(1, fields)
  local nextKey, nextArg = n + 1, 11 + m
  for _ = 1, m do
    local keys = {}
    for x = 1, 9 do keys[x] = KEYS[kb + nextKey + x - 1] end
    local args = { ARGV[ab + nextArg + 1], ARGV[ab + nextArg + 2], ARGV[ab + nextArg + 3] }
    local added
    if ARGV[ab + nextArg] == 'p' then added = addPrioritizedJob(keys, args) else added = addStandardJob(keys, args) end
    if type(added) == 'number' and added < 0 then error('BullMQ refused a job: ' .. added) end
    nextKey, nextArg = nextKey + 9, nextArg + 4
  end
  if nextKey <= kc then redis.call('XADD', KEYS[kb + nextKey], '*', unpack(ARGV, ab + nextArg, ab + ac)) end
  -- The claim last, as in the long way: should a step above fail (Redis does not undo a
  -- script's writes on an error), the id is still unknown and the tenant's retry stores it,
  -- its jobs then already there under their ids (docs/architecture.md, "Admission").
  arrive(1, fresh(receivedAt), receivedAt, indices)
  return 0
end
local function run()
  if op == 'admit' then return admit() end
  return ledgerOp()
end
