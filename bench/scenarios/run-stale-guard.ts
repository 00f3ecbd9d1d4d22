import { randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Redis } from "ioredis";
import { routesMatching, type Route } from "../../src/routes/route.js";
import { createDeliveryQueues } from "../../src/queue/delivery-queues.js";
import { createEventLedger } from "../../src/queue/event-ledger.js";
import { createEventStore } from "../../src/queue/event-store.js";
import { createFanOut } from "../../src/queue/fan-out.js";
import { cpuSeconds } from "../lib/cpu-usage.js";
import { startServiceProcess } from "../lib/start-service-process.js";

export interface GuardRun {
  /** the worker process's CPU (user + system) per delivery */
  workerCpuUs: number;
  /** scripts sent to Redis per delivery (EVALSHA: BullMQ's, the ledger's, the guard's), each a command of its own */
  redisScripts: number;
  /** commands Redis executed per delivery, those inside scripts included */
  redisCommandsExecuted: number;
  /** Redis's own CPU per delivery (INFO cpu) */
  redisCpuUs: number;
  eventsPerSecond: number;
}

export type StaleGuardResults = { status: "measured"; events: number; plain: GuardRun; guarded: GuardRun } | { status: "pending"; reason: string };

export interface StaleGuardContext {
  redis: Redis;
  redisUrl: string;
  dataDir: string;
  sinkUrl: string;
  log(message: string): void;
}

const events = 10_000;

/**
 * The cost of `dropStale` per delivery: the same 10,000 `user.updated` events, each of
 * its own user (so every one passes the guard: one lease taken before the POST, one
 * version recorded after, no waits, nothing stale), drained by one `--role worker`
 * process through a plain route, then through a `dropStale` one. The queue is paused
 * while it fills, so the worker's CPU and Redis's counters cover the deliveries only.
 */
export async function runStaleGuard(context: StaleGuardContext): Promise<StaleGuardResults> {
  const plain = await drain(context, false);
  if (plain === undefined) return { status: "pending", reason: "the worker did not drain the queue within 120 s" };
  const guarded = await drain(context, true);
  if (guarded === undefined) return { status: "pending", reason: "the dropStale worker did not drain the queue within 120 s" };
  return { status: "measured", events, plain, guarded };
}

async function drain(context: StaleGuardContext, dropStale: boolean): Promise<GuardRun | undefined> {
  const { redis, log } = context;
  log(`stale guard: ${events} deliveries through a ${dropStale ? "dropStale" : "plain"} route`);
  await redis.flushall();
  const queuePrefix = `bench-guard-${dropStale ? "on" : "off"}`;
  const route: Route = { name: "guard", match: ["*"], url: `${context.sinkUrl}/deliver`, headers: {}, timeoutMs: 10_000, maxAttemptsPerEvent: 10, concurrency: 10, dropStale };
  const routesFile = join(context.dataDir, "bench-guard-routes.json");
  await writeFile(routesFile, JSON.stringify([route]));
  const queues = createDeliveryQueues(redis, queuePrefix, [route], { ageSeconds: 3600, count: events });
  const queue = queues.forRoute("guard");
  await queue.pause();
  const worker = await startServiceProcess({ role: "worker", redisUrl: context.redisUrl, queuePrefix, dataDir: context.dataDir, env: { ROUTES_FILE: routesFile, LOG_LEVEL: "warn" } });
  try {
    const store = createEventStore({ ledger: createEventLedger(redis, queuePrefix, 3600), fanOut: createFanOut(queues), routesFor: routesMatching([route]) });
    const now = new Date().toISOString();
    for (let index = 0; index < events; index += 500) {
      await Promise.all(
        Array.from({ length: Math.min(500, events - index) }, () =>
          store.store(
            {
              id: `evt_${randomBytes(11).toString("hex")}`,
              source: "urn:auth0:bench",
              specversion: "1.0",
              type: "user.updated",
              time: now,
              data: { object: { user_id: `auth0|${randomBytes(12).toString("hex")}`, email: "bench@example.com", updated_at: now } },
            },
            { origin: "webhook" },
          ),
        ),
      );
    }
    await redis.config("RESETSTAT");
    const cpuBefore = cpuSeconds(worker.pid)!;
    const redisBefore = await redisCpuSeconds(redis);
    const started = performance.now();
    await queue.resume();
    const deadline = Date.now() + 120_000;
    while ((await queue.getJobCounts("completed")).completed! < events) {
      if (Date.now() > deadline) return undefined;
      await new Promise((ok) => setTimeout(ok, 100));
    }
    const seconds = (performance.now() - started) / 1000;
    const cpu = cpuSeconds(worker.pid)! - cpuBefore;
    const redisCpu = (await redisCpuSeconds(redis)) - redisBefore;
    const { scripts, executed } = await commandCounts(redis);
    const per = (value: number, digits = 1) => Math.round((value / events) * 10 ** digits) / 10 ** digits;
    return {
      workerCpuUs: per(cpu * 1e6, 0),
      redisScripts: per(scripts),
      redisCommandsExecuted: per(executed),
      redisCpuUs: per(redisCpu * 1e6, 0),
      eventsPerSecond: Math.round(events / seconds),
    };
  } finally {
    await worker.stop();
    await queues.close();
  }
}

async function redisCpuSeconds(redis: Redis): Promise<number> {
  const info = await redis.info("cpu");
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, "m").exec(info)?.[1] ?? 0);
  return field("used_cpu_user") + field("used_cpu_sys");
}

/**
 * Since RESETSTAT: EVALSHA calls (each one a script a client sent: BullMQ's, the ledger's
 * and the guard's; the guard's round trips are the difference to the plain run), and every
 * command Redis executed, those run inside scripts included (its work).
 */
async function commandCounts(redis: Redis): Promise<{ scripts: number; executed: number }> {
  const info = await redis.info("commandstats");
  let executed = 0;
  for (const match of info.matchAll(/^cmdstat_[^:]+:calls=(\d+)/gm)) executed += Number(match[1]);
  return { scripts: Number(/^cmdstat_evalsha:calls=(\d+)/m.exec(info)?.[1] ?? 0), executed };
}
