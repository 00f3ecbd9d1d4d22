--[[
  The ledger's ops and the functions they share. Included by ledger.lua (the ledger's
  script) and by the admission's script (admission-script.ts), each followed by its `run`
  and ledger-dispatch.lua. Not run on its own. event-ledger.ts says what the ledger stores
  and why.

  Every call names one shard's buckets within the dedupe window, newest first (a
  `markNewest`: the newest alone), all under one hash tag, so one slot; on a cluster, their
  dictionaries after them. A bucket's dictionary is its key and ':names': on a single Redis
  built here rather than sent (8 keys fewer for a claim or an admission to encode and
  parse). A cluster is sent them: a key a script names without declaring it is not
  guarded while its slot migrates, and a bucket and its dictionary on two nodes for that
  moment would split a record from its names.
  ARGV: op, field (8 bytes of the id's digest, sent as 16 hex digits: a binary argument
  would put ioredis's whole command, a batch of them, on its slow Buffer path), now (ms),
  ttl (s), bucket length (s), then the op's own arguments.

  An op reads its keys and arguments where they are in KEYS and ARGV, from kb and ab on
  (0 for a single op; a batch's op further on), never copied into tables of their own: in
  a batch the copies cost more than most ops (docs/benchmarks.md, "The ledger's Lua").

  A record: flags (1 byte: 1 arrived, 2 reconcile, 4 has lastDuplicateAt, 8 has counts,
  16 pull), its time (6 bytes, ms: the arrival, or the first mark of a record without one),
  type and stream (1 byte each, indices into the bucket's dictionary, 0 none), when flagged
  duplicates and replays (1 byte each, saturating) and lastDuplicateAt (6 bytes), then per
  route: its dictionary index, its marks (1 matched, 2 delivered, 4 stale, 8 filtered: no time kept, the arrival is its time) and, when
  marked, the mark's time as ms after the record's (a varint: 2 bytes within 16 s). Route
  indices are per bucket and append-only, so a route renamed, added or removed later never
  changes what an older record means.
]]
local kb, kc, ab, ac, op, field, now, ttl, bucketSeconds, n, dictionariesSent
local dictWritten = false
-- 16 hex digits as their 8 bytes: two numbers packed, a few allocations instead of one per byte.
local function unhex(h)
  return struct.pack('>I4I4', tonumber(h:sub(1, 8), 16), tonumber(h:sub(9, 16), 16))
end
-- An op's keys are KEYS[kb + 1] to KEYS[kb + kc], its arguments ARGV[ab + 1] to ARGV[ab + ac].
local function start(keyBase, keyCount, argBase, argCount)
  kb, kc, ab, ac = keyBase, keyCount, argBase, argCount
  op, field, now, ttl, bucketSeconds = ARGV[ab + 1], unhex(ARGV[ab + 2]), tonumber(ARGV[ab + 3]), tonumber(ARGV[ab + 4]), tonumber(ARGV[ab + 5])
  -- The buckets: the window's, the newest alone for a `markNewest`. An admission or a
  -- finish (never on a cluster) is sent BullMQ's keys after them; another op, on a
  -- cluster, the dictionaries.
  -- Rounded up, as event-ledger.ts counts them: a TTL of 36 h reaches three day buckets back.
  if op == 'markNewest' then n = 1 else n = math.ceil(ttl / bucketSeconds) + 1 end
  dictionariesSent = op ~= 'admit' and op ~= 'finish' and kc == 2 * n
  dictWritten = false
end

-- Bucket i's dictionary: its names' indices and back ('r' routes, 's' types and streams).
local function dictKey(i)
  if dictionariesSent then return KEYS[kb + n + i] end
  return KEYS[kb + i] .. ':names'
end

-- A time in ms as 6 bytes, big-endian (enough until the year 10889).
local function put48(x)
  return struct.pack('>I6', x)
end
local function get48(s, pos)
  return (struct.unpack('>I6', s, pos))
end

-- Most deltas are 1 or 2 bytes (within 16 s): one string.char, no table.
local function putVarint(x)
  if x < 128 then return string.char(x) end
  if x < 16384 then return string.char(x % 128 + 128, math.floor(x / 128)) end
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
  local flags, at, type, stream, pos = struct.unpack('>BI6BB', v)
  local r = { flags = flags, at = at, type = type, stream = stream, dups = 0, replays = 0, routes = {} }
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
  local out = { struct.pack('>BI6BB', flags, r.at, r.type, r.stream) }
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
    local v = redis.call('HGET', KEYS[kb + i], field)
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
  redis.call('HSET', KEYS[kb + i], field, encode(r))
  local extended = keepExpiring(KEYS[kb + i], r.at)
  if dictWritten or extended then keepExpiring(dictKey(i), r.at) end
end

-- The indices of names in bucket i's dictionary, in one read, each missing one added.
-- Each name comes as its dictionary field: its kind ('r' a route, 's' a type or a stream)
-- then the name. 0 for a name '' (the field is the kind alone) and when a string table is
-- full: that string is then not kept. Answers in the table the read returned (a table less
-- per call: the ledger's Lua spends its time on allocations, docs/benchmarks.md).
local function intern(i, fields)
  local dict = dictKey(i)
  local found = redis.call('HMGET', dict, unpack(fields))
  -- Routes that do not all fit are refused before any name is added: a refused call leaves
  -- the dictionary as it found it, with room for the next call's routes.
  local missingRoutes = 0
  for k, f in ipairs(fields) do
    if not found[k] and #f > 1 and f:sub(1, 1) == 'r' then missingRoutes = missingRoutes + 1 end
  end
  if missingRoutes > 0 and (tonumber(redis.call('HGET', dict, '#r')) or 0) + missingRoutes > 255 then
    error('more than 255 route names in one ledger bucket')
  end
  for k, f in ipairs(fields) do
    if #f == 1 then
      found[k] = 0
    elseif found[k] then
      found[k] = tonumber(found[k])
    else
      local kind = f:sub(1, 1)
      local next = redis.call('HINCRBY', dict, '#' .. kind, 1)
      if next > 255 then
        redis.call('HINCRBY', dict, '#' .. kind, -1)
        found[k] = 0
      else
        redis.call('HSET', dict, f, next, string.upper(kind) .. next, f:sub(2))
        dictWritten = true
        found[k] = next
      end
    end
  end
  return found
end

-- One route's index: a single read when the route is known, as it nearly always is.
local function internRoute(i, name)
  local found = redis.call('HGET', dictKey(i), 'r' .. name)
  if found then return tonumber(found) end
  return intern(i, { 'r' .. name })[1]
end

local function nameOf(i, kind, idx)
  if idx == 0 then return '' end
  return redis.call('HGET', dictKey(i), string.upper(kind) .. idx) or ''
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

-- Records the arrival in record r of bucket i: origin from its 7th argument; indices are the bucket's
-- dictionary indices of the type, the stream, then the matched routes in their order.
local function arrive(i, r, receivedAt, indices)
  r.flags = bit.bor(1, ARGV[ab + 7] == 'reconcile' and 2 or ARGV[ab + 7] == 'pull' and 16 or 0)
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

-- ARGV: route, at, mark (2 delivered, 4 stale, 8 filtered). Without a record, one without an arrival
-- (a 'delivered_only' record) starts in the newest bucket. `newestOnly` (a 'markNewest'):
-- sent the newest bucket alone, where a record of a recent event is, it answers 2, writing
-- nothing, when the record is not there (then 'mark' is sent the whole window).
local function markRoute(newestOnly)
  local at = tonumber(ARGV[ab + 7])
  local i, r = find(true)
  if not r then
    if newestOnly then return 2 end
    i = 1; r = fresh(at)
  end
  local idx = internRoute(i, ARGV[ab + 6])
  local route = routeEntry(r, idx)
  if not route then
    route = { idx = idx, marks = 0 }
    r.routes[#r.routes + 1] = route
  end
  route.marks = bit.bor(route.marks, tonumber(ARGV[ab + 8]))
  route.at = at
  write(i, r)
  return 1
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
    local receivedAt = tonumber(ARGV[ab + 6])
    local force = ARGV[ab + 10] == '1'
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
    local fields = { 's' .. ARGV[ab + 8], 's' .. ARGV[ab + 9] }
    for k = 11, ac do fields[#fields + 1] = 'r' .. ARGV[ab + k] end
    arrive(i, r, receivedAt, intern(i, fields))
    return 1
  end

  if op == 'duplicate' then
    -- ARGV: at. A record that expired since the lookup is not recreated.
    local i, r = find(true)
    if not r then return 0 end
    r.dups = math.min(r.dups + 1, 255)
    r.lastDup = tonumber(ARGV[ab + 6])
    write(i, r)
    return 1
  end

  if op == 'mark' or op == 'markNewest' then return markRoute(op == 'markNewest') end

  if op == 'deliveredAt' then
    -- ARGV: route. -1 when not delivered.
    local i, r = find(true)
    if not r then return -1 end
    local idx = redis.call('HGET', dictKey(i), 'r' .. ARGV[ab + 6])
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

