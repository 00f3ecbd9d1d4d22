/**
 * Redis's time per ledger op, by itself: what the dedupe ledger's Lua costs Redis before
 * anything else runs beside it (docs/benchmarks.md, "The ledger's Lua").
 *   node --import tsx bench/ledger-op-cost.ts [rounds] [baseline]
 * `baseline`: a folder holding another version's ledger.lua, ledger-core.lua and
 * ledger-dispatch.lua (`git show <commit>:src/queue/ledger-core.lua > …`), measured in the
 * same run, the two alternating round by round so a busy machine moves both alike.
 * Its own redis-server (no append-only file); 1,024 id shards, each with the window of 8
 * day buckets the default 7-day DEDUPE_TTL_SECONDS gives, as the service keeps them. Per
 * round and version: 10,000 new ids claimed 50 to a call (as the receiver batches them),
 * 2,000 of them marked delivered 5 to a call (the worker's `markNewest`), 5,000 new ids
 * looked up 50 to a call (the whole window read: the long way's check, and a cluster's). Each figure is INFO commandstats' µs for the script calls over the ops;
 * a trivial script's call, the fixed cost of any EVALSHA, for comparison. Medians at the end.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { settings } from "../src/config/config.js";
import { loadLua } from "../src/redis/load-lua.js";
import { ledgerScript } from "../src/queue/ledger-script.js";
import { ledgerBucketKey } from "../src/queue/queue-names.js";
import { createRedis, untilReady } from "../src/redis/redis-connection.js";
import { startRedisServer } from "../src/redis/redis-server.js";
import { median } from "./lib/percentile.js";
import { callsBetween, commandCalls } from "./lib/redis-figures.js";

const [roundsArg, baseline] = process.argv.slice(2);
const rounds = Number(roundsArg ?? 6);
const dir = await mkdtemp(join(tmpdir(), "sk-ledger-op-cost-"));
const server = await startRedisServer({ dir, appendOnly: false });
const redis = createRedis(server.url, "client");
if ("isCluster" in redis && redis.isCluster) throw new Error("a standalone Redis is expected");
await untilReady(redis);

const ttl = settings.DEDUPE_TTL_SECONDS[0].parse(undefined);
const day = 86_400;
const now = Date.now();
const newestDay = Math.floor(now / (day * 1000));
const shards = 1024;
/**
 * A shard's window of buckets, newest first, as event-ledger.ts sends it on a single Redis;
 * `all` adds their dictionaries, as versions before 5967d56 (a baseline) were sent them.
 */
const windowOf = (shard: number) => {
  const buckets = Array.from({ length: Math.ceil(ttl / day) + 1 }, (_, i) => ledgerBucketKey("cost", shard, newestDay - i));
  return { buckets, all: [...buckets, ...buckets.map((key) => `${key}:names`)] };
};
const windows = Array.from({ length: shards }, (_, shard) => windowOf(shard));

/** Each version's script, and whether it is sent the dictionaries' keys (a script that builds them has `.. ':names'`). */
const load = async (script: string) => ({ sha: String(await redis.script("LOAD", script)), sentDictionaries: !script.includes(".. ':names'") });
const versions: Record<string, { sha: string; sentDictionaries: boolean }> = { current: await load(ledgerScript) };
if (baseline) versions.baseline = await load(loadLua(pathToFileURL(join(resolve(baseline), "ledger.lua"))));
const trivial = String(await redis.script("LOAD", "return 1"));

type Op = { keys: string[]; args: Array<string | number> };
/** Ops in the ledger's batch form (ledger-dispatch.lua), as the transport sends a turn's. */
const batch = (sha: string, ops: Op[]) =>
  redis.evalsha(sha, ops.reduce((sum, op) => sum + op.keys.length, 0), ...ops.flatMap((op) => op.keys), "batch", ops.length, ...ops.flatMap((op) => [op.keys.length, op.args.length, ...op.args]));

/**
 * µs of script time per op: `calls` calls of `opsPerCall` ops, 20 in flight. Each op must
 * answer `expected` (a batch answers an error as that op's reply): a version sent keys it
 * does not expect is refused, not timed.
 */
async function measure(calls: number, opsPerCall: number, expected: number, send: () => Promise<unknown>): Promise<number> {
  const check = (reply: unknown) => {
    const replies = Array.isArray(reply) ? reply : [reply];
    if (replies.length !== opsPerCall || replies.some((one) => one !== expected)) throw new Error(`an op answered ${JSON.stringify(replies.find((one) => one !== expected))}, not ${expected}`);
  };
  const before = await commandCalls(redis);
  for (let sent = 0; sent < calls; sent += 20) await Promise.all(Array.from({ length: Math.min(20, calls - sent) }, async () => check(await send())));
  const { calls: count, usec } = callsBetween(before, await commandCalls(redis), "evalsha");
  return usec / count / opsPerCall;
}

const figures: Record<string, number[]> = {};
const keep = (name: string, value: number) => {
  (figures[name] ??= []).push(value);
  return `${name} ${value.toFixed(1)}`;
};
for (let round = 1; round <= rounds; round++) {
  const order = round % 2 ? Object.keys(versions) : Object.keys(versions).reverse();
  const line = [keep("trivial script", await measure(500, 1, 1, () => redis.evalsha(trivial, 0)))];
  for (const version of order) {
    const { sha, sentDictionaries } = versions[version]!;
    const claimed: Array<{ shard: number; field: string }> = [];
    line.push(
      keep(`${version}: claim, new id`, await measure(200, 50, 1, () =>
        batch(sha, Array.from({ length: 50 }, () => {
          const id = { shard: Math.floor(Math.random() * shards), field: randomBytes(8).toString("hex") };
          claimed.push(id);
          return { keys: windows[id.shard]![sentDictionaries ? "all" : "buckets"], args: ["claim", id.field, now, ttl, day, now, "webhook", "user.updated", "est_bench", "0", "default"] };
        })),
      )),
    );
    let next = 0;
    line.push(
      keep(`${version}: delivered mark`, await measure(400, 5, 1, () =>
        batch(sha, Array.from({ length: 5 }, () => {
          const { shard, field } = claimed[next++]!;
          const newest = windows[shard]!.buckets[0]!;
          return { keys: sentDictionaries ? [newest, `${newest}:names`] : [newest], args: ["markNewest", field, now, ttl, day, "default", now + 5, 2] };
        })),
      )),
    );
    line.push(
      keep(`${version}: lookup, new id`, await measure(100, 50, 0, () =>
        batch(sha, Array.from({ length: 50 }, () => {
          const shard = Math.floor(Math.random() * shards);
          return { keys: windows[shard]!.buckets, args: ["lookup", randomBytes(8).toString("hex"), now, ttl, day] };
        })),
      )),
    );
  }
  process.stdout.write(`round ${round} (µs per op): ${line.join(", ")}\n`);
}
process.stdout.write(`medians of ${rounds} rounds (µs per op):\n`);
for (const [name, values] of Object.entries(figures)) process.stdout.write(`  ${name}: ${median(values).toFixed(1)}\n`);
redis.disconnect();
await server.stop();
await rm(dir, { recursive: true, force: true });
