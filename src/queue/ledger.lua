--[[
  The ledger's one script (event-ledger.ts says what it stores and why; ledger-core.lua
  the record's layout).

  Input:
    KEYS one shard's buckets within the dedupe window, newest first (a delivered mark's
         `markNewest`: the newest alone); a batch: every op's keys in turn
    ARGV op, field, now (ms), ttl (s), bucket length (s), then the op's own arguments; or
         'batch', the op count, then per op its key count, its argument count and its
         arguments

  Output:
    the op's reply; a batch: each op's reply in its order
]]
--- @include "ledger-core.lua"
local run = ledgerOp
--- @include "ledger-dispatch.lua"
