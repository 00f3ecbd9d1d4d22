--[[
  The ledger's ops and the functions they share. Included by ledger.lua (the ledger's
  script) and by the admission's script (admission-script.ts), each followed by its `run`
  and ledger-dispatch.lua. Not run on its own. event-ledger.ts says what the ledger stores
  and why.

  Every call names one shard's buckets within the dedupe window, newest first, then their
  dictionaries (a lookup: the buckets alone): all under one hash tag, so one slot.
  ARGV: op, field (8 bytes of the id's digest, sent as 16 hex digits: a binary argument
  would put ioredis's whole command, a batch of them, on its slow Buffer path), now (ms),
  ttl (s), bucket length (s), then the op's own arguments.

  A record: flags (1 byte: 1 arrived, 2 reconcile, 4 has lastDuplicateAt, 8 has counts,
  16 pull), its time (6 bytes, ms: the arrival, or the first mark of a record without one),
  type and stream (1 byte each, indices into the bucket's dictionary, 0 none), when flagged
  duplicates and replays (1 byte each, saturating) and lastDuplicateAt (6 bytes), then per
  route: its dictionary index, its marks (1 matched, 2 delivered, 4 stale) and, when
  marked, the mark's time as ms after the record's (a varint: 2 bytes within 16 s). Route
  indices are per bucket and append-only, so a route renamed, added or removed later never
  changes what an older record means.
]]
local K, A, op, field, now, ttl, bucketSeconds, n
local dictWritten = false
local function unhex(h)
  local out = {}
  for k = 1, #h, 2 do out[#out + 1] = tonumber(h:sub(k, k + 1), 16) end
  return string.char(unpack(out))
end
local function start(keys, args)
  K, A = keys, args
  op, field, now, ttl, bucketSeconds = A[1], unhex(A[2]), tonumber(A[3]), tonumber(A[4]), tonumber(A[5])
  -- A lookup is sent the buckets alone (it reads no dictionary); an admission its jobs' keys after them.
  if op == 'lookup' then n = #K elseif op == 'admit' then n = math.floor(ttl / bucketSeconds) + 1 else n = #K / 2 end
  dictWritten = false
end

local function put48(x)
  local high = math.floor(x / 16777216)
  local low = x - high * 16777216
  return string.char(math.floor(high / 65536) % 256, math.floor(high / 256) % 256, high % 256, math.floor(low / 65536), math.floor(low / 256) % 256, low % 256)
end
local function get48(s, pos)
  local a, b, c, d, e, f = s:byte(pos, pos + 5)
  return ((a * 256 + b) * 256 + c) * 16777216 + (d * 256 + e) * 256 + f
end

local function putVarint(x)
  local out = {}
  while x >= 128 do
    out[#out + 1] = string.char(x % 128 + 128)
    x = math.floor(x / 128)
  end
  out[#out + 1] = string.char(x)
  return table.concat(out)
end
local function getVarint(s, pos)
  local x, scale = 0, 1
  while true do
    local b = s:byte(pos)
    pos = pos + 1
    if b < 128 then return x + b * scale, pos end
    x = x + (b - 128) * scale
    scale = scale * 128
  end
end

local function decode(v)
  local r = { flags = v:byte(1), at = get48(v, 2), type = v:byte(8), stream = v:byte(9), dups = 0, replays = 0, routes = {} }
  local pos = 10
  if bit.band(r.flags, 8) ~= 0 then r.dups = v:byte(pos); r.replays = v:byte(pos + 1); pos = pos + 2 end
  if bit.band(r.flags, 4) ~= 0 then r.lastDup = get48(v, pos); pos = pos + 6 end
  while pos <= #v do
    local route = { idx = v:byte(pos), marks = v:byte(pos + 1) }
    pos = pos + 2
    if bit.band(route.marks, 6) ~= 0 then
      local delta
      delta, pos = getVarint(v, pos)
      route.at = r.at + delta
    end
    r.routes[#r.routes + 1] = route
  end
  return r
end

local function encode(r)
  local flags = bit.band(r.flags, 19)
  if r.lastDup then flags = bit.bor(flags, 4) end
  if r.dups > 0 or r.replays > 0 then flags = bit.bor(flags, 8) end
  local out = { string.char(flags), put48(r.at), string.char(r.type, r.stream) }
  if bit.band(flags, 8) ~= 0 then out[#out + 1] = string.char(r.dups, r.replays) end
  if r.lastDup then out[#out + 1] = put48(r.lastDup) end
  for _, route in ipairs(r.routes) do
    out[#out + 1] = string.char(route.idx, route.marks)
    -- A mark from before the arrival (a record claimed over its marks) reads as the arrival's time.
    if bit.band(route.marks, 6) ~= 0 then out[#out + 1] = putVarint(math.max(0, (route.at or r.at) - r.at)) end
  end
  return table.concat(out)
end

-- The newest bucket holding a record of this id younger than the ttl: its index and
-- the record, decoded only when asked (a lookup reads the header alone).
local function find(full)
  for i = 1, n do
    local v = redis.call('HGET', K[i], field)
    if v and now - get48(v, 2) <= ttl * 1000 then
      if full then return i, decode(v) end
      return i, { flags = v:byte(1) }
    end
  end
  return nil, nil
end

-- Every write ends here: a key never outlives its bucket's window (TTL -1 is the one
-- case to fix: a key just created, or one written without a TTL), and a record whose
-- time moved forward (a claim over marks) keeps its bucket for a full ttl. True when it
-- set an expiry.
local function keepExpiring(key, at)
  local left = redis.call('TTL', key)
  local want = math.ceil((at - now) / 1000) + ttl
  if left == -1 then
    redis.call('EXPIRE', key, math.max(want, ttl) + bucketSeconds)
    return true
  elseif left >= 0 and left < want then
    redis.call('EXPIRE', key, want)
    return true
  end
  return false
end

-- The dictionary lives as long as its bucket: its expiry follows whenever it was written
-- or the bucket's moved, and only then (a TTL call less on most writes).
local function write(i, r)
  redis.call('HSET', K[i], field, encode(r))
  local extended = keepExpiring(K[i], r.at)
  if dictWritten or extended then keepExpiring(K[n + i], r.at) end
end

-- The indices of names in bucket i's dictionary ('r' routes, 's' types and streams), in
-- one read, each missing one added. 0 for '' and when a string table is full: that
-- string is then not kept.
local function intern(i, names)
  local dict = K[n + i]
  local fields = {}
  for k, entry in ipairs(names) do fields[k] = entry[1] .. entry[2] end
  local found = redis.call('HMGET', dict, unpack(fields))
  local out = {}
  for k, entry in ipairs(names) do
    local kind, name = entry[1], entry[2]
    if name == '' then
      out[k] = 0
    elseif found[k] then
      out[k] = tonumber(found[k])
    else
      local next = redis.call('HINCRBY', dict, '#' .. kind, 1)
      if next > 255 then
        redis.call('HINCRBY', dict, '#' .. kind, -1)
        if kind == 'r' then error('more than 255 route names in one ledger bucket') end
        out[k] = 0
      else
        redis.call('HSET', dict, fields[k], next, string.upper(kind) .. next, name)
        dictWritten = true
        out[k] = next
      end
    end
  end
  return out
end

local function nameOf(i, kind, idx)
  if idx == 0 then return '' end
  return redis.call('HGET', K[n + i], string.upper(kind) .. idx) or ''
end

local function routeEntry(r, idx)
  for _, route in ipairs(r.routes) do
    if route.idx == idx then return route end
  end
  return nil
end

local function fresh(at)
  return { flags = 0, at = at, type = 0, stream = 0, dups = 0, replays = 0, routes = {} }
end

-- Records the arrival in record r of bucket i: origin from A[7]; indices are the bucket's
-- dictionary indices of the type, the stream, then the matched routes in their order.
local function arrive(i, r, receivedAt, indices)
  r.flags = bit.bor(1, A[7] == 'reconcile' and 2 or A[7] == 'pull' and 16 or 0)
  r.at = receivedAt
  r.type = indices[1]
  r.stream = indices[2]
  -- The matched routes in their order, then the marks of any other route.
  local routes = {}
  local taken = {}
  for k = 3, #indices do
    local idx = indices[k]
    local earlier = routeEntry(r, idx)
    routes[#routes + 1] = { idx = idx, marks = bit.bor(1, earlier and earlier.marks or 0), at = earlier and earlier.at }
    taken[idx] = true
  end
  for _, route in ipairs(r.routes) do
    if not taken[route.idx] then routes[#routes + 1] = route end
  end
  r.routes = routes
  write(i, r)
end

local function ledgerOp()
  if op == 'lookup' then
    local _, r = find(false)
    if not r then return 0 end
    if bit.band(r.flags, 1) ~= 0 then return 1 end
    return 2
  end

  if op == 'claim' then
    -- ARGV: receivedAt, origin, type, stream, force, route names...
    local receivedAt = tonumber(A[6])
    local force = A[10] == '1'
    local i, r = find(true)
    if r and bit.band(r.flags, 1) ~= 0 then
      if not force then
        r.dups = math.min(r.dups + 1, 255)
        r.lastDup = receivedAt
        write(i, r)
        return 0
      end
      r.replays = math.min(r.replays + 1, 255)
      write(i, r)
      return 1
    end
    if not r then i = 1; r = fresh(receivedAt) end
    local names = { { 's', A[8] }, { 's', A[9] } }
    for k = 11, #A do names[#names + 1] = { 'r', A[k] } end
    arrive(i, r, receivedAt, intern(i, names))
    return 1
  end

  if op == 'duplicate' then
    -- ARGV: at. A record that expired since the lookup is not recreated.
    local i, r = find(true)
    if not r then return 0 end
    r.dups = math.min(r.dups + 1, 255)
    r.lastDup = tonumber(A[6])
    write(i, r)
    return 1
  end

  if op == 'mark' or op == 'markNewest' then
    -- ARGV: route, at, mark (2 delivered, 4 stale). Without a record, one without an
    -- arrival (a 'delivered_only' record) starts in the newest bucket. 'markNewest' is
    -- sent the newest bucket and its dictionary alone, where a record of a recent event
    -- is: it answers 2, writing nothing, when the record is not there (then 'mark' is
    -- sent the whole window).
    local at = tonumber(A[7])
    local i, r = find(true)
    if not r then
      if op == 'markNewest' then return 2 end
      i = 1; r = fresh(at)
    end
    local idx = intern(i, { { 'r', A[6] } })[1]
    local route = routeEntry(r, idx)
    if not route then
      route = { idx = idx, marks = 0 }
      r.routes[#r.routes + 1] = route
    end
    route.marks = bit.bor(route.marks, tonumber(A[8]))
    route.at = at
    write(i, r)
    return 1
  end

  if op == 'deliveredAt' then
    -- ARGV: route. -1 when not delivered.
    local i, r = find(true)
    if not r then return -1 end
    local idx = redis.call('HGET', K[n + i], 'r' .. A[6])
    local route = idx and routeEntry(r, tonumber(idx))
    if route and bit.band(route.marks, 2) ~= 0 then return route.at end
    return -1
  end

  if op == 'get' then
    -- { at, origin, type, stream, duplicates, lastDuplicateAt or -1, replays, then per
    --   route: name, marks, mark time or -1 }
    local i, r = find(true)
    if not r or bit.band(r.flags, 1) == 0 then return nil end
    local out = { r.at, bit.band(r.flags, 2) ~= 0 and 'reconcile' or bit.band(r.flags, 16) ~= 0 and 'pull' or 'webhook', nameOf(i, 's', r.type), nameOf(i, 's', r.stream), r.dups, r.lastDup or -1, r.replays }
    for _, route in ipairs(r.routes) do
      out[#out + 1] = nameOf(i, 'r', route.idx)
      out[#out + 1] = route.marks
      out[#out + 1] = route.at or -1
    end
    return out
  end

  return redis.error_reply('unknown ledger op ' .. op)
end

