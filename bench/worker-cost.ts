/**
 * The dispatcher's own CPU per delivery beside the floor worker's, in one process and
 * alternating, so a busy machine moves both alike:
 *   node --import tsx bench/worker-cost.ts [events] [rounds]
 * Its own redis-server and a sink process answering 204; per round and variant, `events`
 * jobs stored through the event store, then drained. `floor`: a BullMQ worker whose
 * processor only POSTs (bench/processes/floor-worker.ts), `floor-limiter` the same with
 * the limiter every route's worker has (dispatch/rate-limiter.ts); `service`: the
 * dispatcher as a worker role builds it (service/create-delivery.ts: circuit, freshness,
 * retry window, the ledger on its own connection), and what it is without some of its
 * parts: a variant name holding `noledger` (no delivered mark), `nofresh`, `nocircuit`, or
 * `apart` its delivered mark in a call of its own instead of in the job's completion
 * (mark-at-completion.ts; as on a cluster), gathered, or with `turn` as well sent per
 * event-loop turn instead of gathered (deliveryMarkGatherMs).
 * Choose with WORKER_COST_VARIANTS (default `floor,service`). CPU is this process's
 * (user + system) from the resume until the sink had every event, per delivery; medians
 * at the end. The first round runs cold (the JIT): compare the later ones
 * (docs/benchmarks.md, "Our own JavaScript per event").
 */
import { randomBytes } from "node:crypto";
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "bullmq";
import { createDispatcher } from "../src/dispatch/create-dispatcher.js";
import { rateLimiter } from "../src/dispatch/rate-limiter.js";
import { createDownstreamClient } from "../src/dispatch/downstream-client.js";
import { createFreshnessRecorder } from "../src/freshness/create-freshness-recorder.js";
import { createLogger } from "../src/logging/logger.js";
import type { DeliveryJobData } from "../src/queue/delivery-job.js";
import { createEventLedger, deliveryMarkGatherMs } from "../src/queue/event-ledger.js";
import { deliveryQueueBullPrefix, deliveryQueueName } from "../src/queue/queue-names.js";
import { createRedis, untilReady } from "../src/redis/redis-connection.js";
import { startRedisServer } from "../src/redis/redis-server.js";
import type { Route } from "../src/routes/route.js";
import { callsBetween, commandCalls } from "./lib/redis-figures.js";
import { startCostMeter } from "./lib/cpu-usage.js";
import { median } from "./lib/percentile.js";
import { costStores } from "./lib/cost-stores.js";

const [events = 5000, rounds = 3] = process.argv.slice(2).map(Number);
const variants = (process.env.WORKER_COST_VARIANTS ?? "floor,service").split(",");
const dir = await mkdtemp(join(tmpdir(), "sk-worker-cost-"));
const redisServer = await startRedisServer({ dir, appendOnly: false });
const sinkCode = `
let received = 0, want = Infinity;
process.on("message", (n) => { received = 0; want = n; });
require("node:http").createServer((req, res) => {
  req.resume();
  req.on("end", () => { res.writeHead(204).end(); if (++received === want) process.send("done"); });
}).listen(0, "127.0.0.1", function () { process.send(this.address().port); });`;
const sink = spawn(process.execPath, ["-e", sinkCode], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
const port = await new Promise<number>((ok) => sink.once("message", (message) => ok(Number(message))));
const route: Route = { name: "default", match: ["*"], url: `http://127.0.0.1:${port}/deliver`, headers: {}, timeoutMs: 10_000, concurrency: 10, dropStale: false };
const logger = createLogger("info");
const redis = createRedis(redisServer.url, "client");
await untilReady(redis);
const cpuPer: Record<string, number[]> = {};
const redisPer: Record<string, number[]> = {};

for (let round = 1; round <= rounds; round++) {
  for (const variant of variants) {
    await redis.flushall();
    const prefix = `cost-${variant}-${round}`;
    const { queues, queue, store } = costStores(redis, prefix, route);
    await queue.pause();
    const now = new Date().toISOString();
    for (let index = 0; index < events; index += 500) {
      await Promise.all(
        Array.from({ length: Math.min(500, events - index) }, () => {
          const data = { object: { user_id: `auth0|${randomBytes(12).toString("hex")}`, email: "bench@example.com", email_verified: true, name: "Bench User", updated_at: now } };
          return store.store({ id: `evt_${randomBytes(11).toString("hex")}`, source: "urn:auth0:bench", specversion: "1.0", type: "user.updated", time: now, data }, { origin: "webhook", streamId: "est_bench" });
        }),
      );
    }
    const dispatch = createRedis(redisServer.url, "worker");
    const records = createRedis(redisServer.url, "worker");
    await Promise.all([untilReady(dispatch), untilReady(records)]);
    let stop: () => Promise<void>;
    if (variant.startsWith("floor")) {
      const client = createDownstreamClient(route);
      const worker = new Worker<DeliveryJobData>(
        deliveryQueueName(route.name),
        async (job) => {
          const answer = await client.post({ "content-type": "application/cloudevents+json", "webhook-id": job.data.event.id }, JSON.stringify(job.data.event));
          if (!("status" in answer) || answer.status >= 300) throw new Error(`sink answered ${JSON.stringify(answer)}`);
        },
        { connection: dispatch, prefix: deliveryQueueBullPrefix(prefix, route.name), concurrency: route.concurrency, ...(variant.includes("limiter") ? { limiter: rateLimiter(undefined) } : {}) },
      );
      await worker.waitUntilReady();
      stop = async () => (await worker.close(), client.close());
    } else {
      const freshness = createFreshnessRecorder({ redis: records, queuePrefix: prefix, logger });
      const realLedger = createEventLedger(records, prefix, 604_800, 1024, { gatherMarksMs: variant.includes("turn") ? 0 : deliveryMarkGatherMs });
      // `apart`: the mark in a call of its own, gathered, and BullMQ's completion alone (as on a cluster).
      const apart = variant.includes("apart") || variant.includes("noledger") ? { finishDelivered: () => Promise.resolve("unsupported" as const) } : {};
      const ledger = { ...realLedger, ...apart, ...(variant.includes("noledger") ? { markDelivered: () => Promise.resolve() } : {}) };
      const dispatcher = createDispatcher({
        connection: dispatch, queuePrefix: prefix, routes: [route], ledger, logger,
        backoffBaseMs: 1000, backoffMaxMs: 60_000, retryWindowMs: 259_200_000, circuit: variant.includes("nocircuit") ? undefined : { failures: 10, probeMinMs: 1000, probeMaxMs: 60_000 },
        shutdownTimeoutMs: 10_000, lockDurationMs: 30_000, stalledIntervalMs: 30_000, freshness: variant.includes("nofresh") ? undefined : freshness,
      });
      stop = async () => (await dispatcher.close(), await freshness.close(), await realLedger.flush());
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
    const done = new Promise<void>((ok) => sink.once("message", () => ok()));
    sink.send(events);
    const callsBefore = await commandCalls(redis);
    const redisCost = startCostMeter({ redis: redisServer.process.pid! });
    const before = process.cpuUsage();
    const started = performance.now();
    await queue.resume();
    await done;
    const cpu = process.cpuUsage(before);
    const redisCpu = redisCost.per(events).redis?.cpuUs ?? Number.NaN;
    const callsAfter = await commandCalls(redis);
    const seconds = (performance.now() - started) / 1000;
    const perDelivery = Math.round((cpu.user + cpu.system) / events);
    (cpuPer[variant] ??= []).push(perDelivery);
    (redisPer[variant] ??= []).push(Math.round(redisCpu));
    const scripts = callsBetween(callsBefore, callsAfter, "evalsha");
    process.stdout.write(`round ${round} ${variant}: ${perDelivery} µs CPU per delivery, ${Math.round(events / seconds)} deliveries/s; Redis ${Math.round(redisCpu)} µs CPU per delivery, ${(scripts.calls / events).toFixed(2)} scripts (${(scripts.usec / events).toFixed(1)} µs)\n`);
    await stop();
    await queues.close();
    dispatch.disconnect();
    records.disconnect();
  }
}
for (const [variant, values] of Object.entries(cpuPer)) process.stdout.write(`${variant}: median ${median(values)} µs (${values.join(", ")}); Redis median ${median(redisPer[variant]!)} µs (${redisPer[variant]!.join(", ")})\n`);
redis.disconnect();
sink.kill();
await redisServer.stop();
await rm(dir, { recursive: true, force: true });
