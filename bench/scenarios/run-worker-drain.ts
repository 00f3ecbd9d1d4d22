import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import type { Redis } from "ioredis";
import { createDeliveryQueues } from "../../src/queue/delivery-queues.js";
import { createEventLedger } from "../../src/queue/event-ledger.js";
import { createEventStore } from "../../src/queue/event-store.js";
import { createFanOut } from "../../src/queue/fan-out.js";
import { routesMatching, type Route } from "../../src/routes/route.js";
import { createSinkProbe } from "../lib/create-sink-probe.js";
import { startCostMeter } from "../lib/cpu-usage.js";
import { startChild, tsxArgs } from "../lib/start-child.js";
import { startServiceProcess } from "../lib/start-service-process.js";

/** `service`: `start --role worker`; `floorPost`: BullMQ and one POST per job; `floorNoop`: BullMQ alone (processes/floor-worker.ts). */
export type DrainVariant = "service" | "floorPost" | "floorNoop";

export interface DrainRun {
  seconds: number;
  eventsPerSecond: number;
  /** per delivered job, from the resume until the queue was empty: CPU µs and read/write system calls of each process */
  costPerEvent: Record<string, { cpuUs: number; syscalls: number }>;
}

export interface WorkerDrainResults {
  events: number;
  runs: Record<DrainVariant, DrainRun>;
}

export interface WorkerDrainContext {
  redis: Redis;
  redisUrl: string;
  redisPid: number;
  sinkUrl: string;
  sinkPid: number;
  dataDir: string;
  events: number;
  cpuProfileDir?: string;
  log(message: string): void;
}

const floorWorker = fileURLToPath(new URL("../processes/floor-worker.ts", import.meta.url));
const variants: DrainVariant[] = ["floorNoop", "floorPost", "service"];

/**
 * The worker's cost per delivery, apart from the receiver's: `events` jobs stored through
 * the event store into a paused route queue, a worker started and left to settle, then
 * the queue resumed and drained into the sink. The same for the two floors, so the
 * service's own share per delivery is its figure less `floorPost`'s.
 */
export async function runWorkerDrain(context: WorkerDrainContext): Promise<WorkerDrainResults> {
  const runs = {} as Record<DrainVariant, DrainRun>;
  for (const variant of variants) {
    context.log(`worker drain (${variant}): ${context.events} queued deliveries`);
    runs[variant] = await drainOnce(context, variant);
  }
  return { events: context.events, runs };
}

async function drainOnce(context: WorkerDrainContext, variant: DrainVariant): Promise<DrainRun> {
  const { redis, events } = context;
  await redis.flushall();
  const queuePrefix = `bench-drain-${variant}`;
  const sinkUrl = `${context.sinkUrl}/deliver`;
  const route: Route = { name: "default", match: ["*"], url: sinkUrl, headers: {}, timeoutMs: 10_000, concurrency: 10, dropStale: false };
  const queues = createDeliveryQueues(redis, queuePrefix, [route], { ageSeconds: 3600, count: 1000 });
  const queue = queues.forRoute(route.name);
  const store = createEventStore({ ledger: createEventLedger(redis, queuePrefix, 604_800), fanOut: createFanOut(queues), routesFor: routesMatching([route]) });
  await queue.pause();
  const now = new Date().toISOString();
  for (let index = 0; index < events; index += 500) {
    await Promise.all(
      Array.from({ length: Math.min(500, events - index) }, () => {
        const id = `evt_${randomBytes(11).toString("hex")}`;
        const data = { object: { user_id: `auth0|${randomBytes(12).toString("hex")}`, email: "bench@example.com", email_verified: true, name: "Bench User", updated_at: now } };
        return store.store({ id, source: "urn:auth0:bench", specversion: "1.0", type: "user.updated", time: now, data }, { origin: "webhook", streamId: "est_bench" });
      }),
    );
  }
  const worker =
    variant === "service"
      ? await startServiceProcess({ role: "worker", redisUrl: context.redisUrl, queuePrefix, dataDir: context.dataDir, env: { DOWNSTREAM_URL: sinkUrl }, cpuProfileDir: context.cpuProfileDir })
      : await startChild(tsxArgs(floorWorker, [context.redisUrl, queuePrefix, sinkUrl, variant === "floorPost" ? "post" : "noop"]));
  const pid = "pid" in worker ? worker.pid : worker.process.pid!;
  try {
    // Let the start's own work (module loading, first connections) finish before measuring.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const sink = createSinkProbe(context.sinkUrl);
    await sink.reset();
    const meter = startCostMeter({ worker: pid, redis: context.redisPid, sink: context.sinkPid });
    const started = performance.now();
    await queue.resume();
    const deadline = Date.now() + 300_000;
    while ((await left(queue)) > 0) {
      if (Date.now() > deadline) throw new Error(`worker drain (${variant}): ${await left(queue)} jobs still queued after 300 s`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const seconds = (performance.now() - started) / 1000;
    const costPerEvent = meter.per(events);
    if (variant !== "floorNoop") {
      const stats = await sink.stats();
      if (stats.unique < events) throw new Error(`worker drain (${variant}): the sink got ${stats.unique} of ${events} events`);
    }
    return { seconds: Math.round(seconds * 100) / 100, eventsPerSecond: Math.round(events / seconds), costPerEvent };
  } finally {
    await worker.stop();
    await queues.close();
  }
}

async function left(queue: ReturnType<ReturnType<typeof createDeliveryQueues>["forRoute"]>): Promise<number> {
  const counts = await queue.getJobCounts("wait", "active", "prioritized", "delayed");
  return Object.values(counts).reduce((sum, count) => sum + count, 0);
}
