/**
 * Redis's CPU per stored event, the service's store beside the floor's one BullMQ add, in one
 * process and alternating, so a busy machine moves both alike:
 *   node --import tsx bench/store-cost.ts [events] [rounds]
 * Its own redis-server (no append-only file); per round and variant, `events` events stored
 * 50 at a time (STORE_COST_BATCH: that many in one event-loop turn, so one admission call). `floor`: `queue.add` as bench/processes/floor-server.ts does it; `service`:
 * the event store as the receiver builds it (service/create-stores.ts: the admission in one
 * round trip); `longway`: the same store without the admission (check, add, claim).
 * Choose with STORE_COST_VARIANTS (default `floor,service`). Prints Redis's CPU (user +
 * system) and its scripts' time (INFO commandstats) per event, and this process's CPU per
 * event; medians at the end. The first round runs cold: compare the later ones.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jobIdFor } from "../src/queue/job-id.js";
import { createRedis, untilReady } from "../src/redis/redis-connection.js";
import { startRedisServer } from "../src/redis/redis-server.js";
import type { Route } from "../src/routes/route.js";
import type { CloudEvent } from "../src/events/cloud-event.js";
import { startCostMeter } from "./lib/cpu-usage.js";
import { callsBetween, commandCalls } from "./lib/redis-figures.js";
import { costStores } from "./lib/cost-stores.js";
import { createEventSource } from "./lib/event-source.js";
import { median } from "./lib/percentile.js";

const [events = 5000, rounds = 4] = process.argv.slice(2).map(Number);
const variants = (process.env.STORE_COST_VARIANTS ?? "floor,service").split(",");
const batch = Number(process.env.STORE_COST_BATCH ?? 50);
const dir = await mkdtemp(join(tmpdir(), "sk-store-cost-"));
const redisServer = await startRedisServer({ dir, appendOnly: false });
const route: Route = { name: "default", match: ["*"], url: "http://127.0.0.1:9/", headers: {}, timeoutMs: 10_000, concurrency: 10, dropStale: false };
const redis = createRedis(redisServer.url, "client");
await untilReady(redis);
const figures: Record<string, { redis: number[]; scripts: number[]; own: number[] }> = {};

const source = createEventSource();
const event = () => source.event("est_bench") as unknown as CloudEvent;

for (let round = 1; round <= rounds; round++) {
  for (const variant of variants) {
    await redis.flushall();
    const prefix = `cost-${variant}-${round}`;
    const { queues, queue, store } = costStores(redis, prefix, route, { admission: variant === "service" });
    const storeOne = async (one: CloudEvent) => {
      if (variant === "floor") await queue.add(one.type, { event: one, origin: "webhook", receivedAt: Date.now() }, { jobId: jobIdFor(one.id) });
      else await store.store(one, { origin: "webhook", streamId: "est_bench" });
    };
    const batches = Array.from({ length: Math.ceil(events / batch) }, (_, index) => Array.from({ length: Math.min(batch, events - index * batch) }, event));
    const callsBefore = await commandCalls(redis);
    const redisCost = startCostMeter({ redis: redisServer.process.pid! });
    const before = process.cpuUsage();
    for (const turn of batches) await Promise.all(turn.map(storeOne));
    const own = process.cpuUsage(before);
    const redisCpu = redisCost.per(events).redis?.cpuUs ?? Number.NaN;
    const callsAfter = await commandCalls(redis);
    const evalsha = callsBetween(callsBefore, callsAfter, "evalsha");
    const [scripts, scriptCalls] = [evalsha.usec / events, evalsha.calls / events];
    const row = (figures[variant] ??= { redis: [], scripts: [], own: [] });
    row.redis.push(Math.round(redisCpu));
    row.scripts.push(Math.round(scripts));
    row.own.push(Math.round((own.user + own.system) / events));
    process.stdout.write(`round ${round} ${variant}: Redis ${Math.round(redisCpu)} µs CPU per event, ${scriptCalls.toFixed(2)} scripts (${scripts.toFixed(1)} µs); this process ${row.own.at(-1)} µs\n`);
    await queues.close();
  }
}
for (const [variant, row] of Object.entries(figures)) {
  process.stdout.write(`${variant}: Redis median ${median(row.redis)} µs (${row.redis.join(", ")}); scripts ${median(row.scripts)} µs; this process ${median(row.own)} µs (${row.own.join(", ")})\n`);
}
redis.disconnect();
await redisServer.stop();
await rm(dir, { recursive: true, force: true });
