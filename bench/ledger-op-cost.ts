/**
 * Redis's time per ledger op, by itself: what the dedupe ledger's Lua costs Redis before
 * anything else runs beside it (docs/benchmarks.md, "The floor on a quiet machine, and where the rest goes").
 *   node --import tsx bench/ledger-op-cost.ts [rounds]
 * Its own redis-server (no append-only file); one shard's window of 8 day buckets, as the
 * default 7-day DEDUPE_TTL_SECONDS gives. Each row is INFO commandstats' µs for the script
 * calls over their count: a trivial script (the fixed cost of any EVALSHA), a lookup of a
 * new id, a claim of one (singly and 50 to a call, as the receiver batches them), and
 * the worker's delivered mark of a claimed id (5 to a call).
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { settings } from "../src/config.js";
import { ledgerScript } from "../src/queue/ledger-script.js";
import { ledgerBucketKey } from "../src/queue/queue-names.js";
import { createRedis, untilReady } from "../src/redis/redis-connection.js";
import { startRedisServer } from "../src/redis/redis-server.js";
import { callsBetween, commandCalls } from "./lib/redis-figures.js";

const [rounds = 2] = process.argv.slice(2).map(Number);
const dir = await mkdtemp(join(tmpdir(), "sk-ledger-op-cost-"));
const server = await startRedisServer({ dir, appendOnly: false });
const redis = createRedis(server.url, "client");
if ("isCluster" in redis && redis.isCluster) throw new Error("a standalone Redis is expected");
await untilReady(redis);
// The default window (DEDUPE_TTL_SECONDS, 7 days) of day buckets, as the service keeps it.
const ttl = settings.DEDUPE_TTL_SECONDS[0].parse(undefined);
const day = 86_400;
const now = Date.now();
const buckets = Array.from({ length: Math.floor(ttl / day) + 1 }, (_, i) => ledgerBucketKey("cost", 1, Math.floor(now / (day * 1000)) - i));
const window = [...buckets, ...buckets.map((key) => `${key}:names`)];
const field = () => randomBytes(8).toString("hex");
const trivial = String(await redis.script("LOAD", "return 1"));
const ledger = String(await redis.script("LOAD", ledgerScript));
const claimed: string[] = [];
const claimArgs = (id: string) => ["claim", id, now, ttl, day, now, "webhook", "user.updated", "est_bench", "0", "default"];

/** A batch of ops in the ledger's batch form (ledger-dispatch.lua). */
function batch(ops: Array<{ keys: string[]; args: Array<string | number> }>) {
  const keys = ops.flatMap((op) => op.keys);
  const args = ops.flatMap((op) => [op.keys.length, op.args.length, ...op.args]);
  return redis.evalsha(ledger, keys.length, ...keys, "batch", ops.length, ...args);
}

async function measure(name: string, calls: number, opsPerCall: number, send: () => Promise<unknown>) {
  const before = await commandCalls(redis);
  for (let sent = 0; sent < calls; sent += 20) await Promise.all(Array.from({ length: 20 }, send));
  const after = await commandCalls(redis);
  const { calls: count, usec } = callsBetween(before, after, "evalsha");
  process.stdout.write(`${name}: ${(usec / count / opsPerCall).toFixed(1)} µs per op (${count} calls of ${opsPerCall})\n`);
}

for (let round = 1; round <= rounds; round++) {
  process.stdout.write(`round ${round}\n`);
  await measure("trivial script", 2000, 1, () => redis.evalsha(trivial, 0));
  await measure("lookup, new id", 2000, 1, () => redis.evalsha(ledger, buckets.length, ...buckets, "lookup", field(), now, ttl, day));
  await measure("lookup, new id, 50 a call", 200, 50, () => batch(Array.from({ length: 50 }, () => ({ keys: buckets, args: ["lookup", field(), now, ttl, day] }))));
  await measure("claim, new id", 2000, 1, () => {
    const id = field();
    claimed.push(id);
    return redis.evalsha(ledger, window.length, ...window, ...claimArgs(id));
  });
  await measure("claim, new id, 50 a call", 200, 50, () =>
    batch(Array.from({ length: 50 }, () => {
      const id = field();
      claimed.push(id);
      return { keys: window, args: claimArgs(id) };
    })),
  );
  let next = 0;
  await measure("delivered mark (markNewest), 5 a call", 400, 5, () =>
    batch(Array.from({ length: 5 }, () => ({ keys: [window[0]!, `${window[0]!}:names`], args: ["markNewest", claimed[next++ % claimed.length]!, now, ttl, day, "default", now + 5, 2] }))),
  );
}
redis.disconnect();
await server.stop();
await rm(dir, { recursive: true, force: true });
