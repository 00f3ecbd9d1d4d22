import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";
import { routesMatching, type Route } from "../../src/routes/route.js";
import { createDeliveryQueues } from "../../src/queue/delivery-queues.js";
import { createEventLedger } from "../../src/queue/event-ledger.js";
import { createEventStore } from "../../src/queue/event-store.js";
import { createFanOut } from "../../src/queue/fan-out.js";
import { usedMemoryForData } from "../lib/redis-figures.js";

export interface MemoryResults {
  events: number;
  /** used_memory growth per event while its job is kept, ledger included */
  bytesPerEventWithJob: number;
  /** what removing the jobs gave back, per job (one route: one job per event) */
  bytesPerJob: number;
  /** used_memory growth per delivered event once its job is gone: the ledger over the dedupe window */
  bytesPerEventLedger: number;
}

export interface MemoryContext {
  redis: Redis;
  events: number;
  log(message: string): void;
}

/**
 * Where Redis memory goes per event, measured with INFO used_memory (less the AOF and
 * client buffers) on an empty Redis:
 * `events` events stored through the event store (one route, so one job each) and marked
 * delivered as the worker would, then their jobs removed (what completed-job retention
 * does an hour later), leaving what the dedupe window keeps. Runs in this process, no
 * service: it measures bytes, not CPU.
 */
export async function runMemory({ redis, events, log }: MemoryContext): Promise<MemoryResults> {
  log(`memory: ${events} events stored, delivered, then their jobs removed`);
  await redis.flushall();
  // Fixed costs first, on a prefix of their own: the scripts loaded, Lua's heap, the
  // connections' buffers. Then nothing of it is counted against the events.
  const warmUp = await storeEvents(redis, "bench-memory-warm-up", 1000);
  await warmUp.close();
  await redis.flushall();
  const before = await usedMemoryForData(redis);
  const measured = await storeEvents(redis, "bench-memory", events);
  try {
    const withJobs = await usedMemoryForData(redis);
    await measured.removeJobs();
    const after = await usedMemoryForData(redis);
    const per = (bytes: number) => Math.round((bytes / events) * 10) / 10;
    return { events, bytesPerEventWithJob: per(withJobs - before), bytesPerJob: per(withJobs - after), bytesPerEventLedger: per(after - before) };
  } finally {
    await measured.close();
  }
}

async function storeEvents(redis: Redis, queuePrefix: string, events: number) {
  const route: Route = { name: "default", match: ["*"], url: "http://127.0.0.1:9/deliver", headers: {}, timeoutMs: 10_000, maxAttemptsPerEvent: 10, concurrency: 10, dropStale: false };
  const queues = createDeliveryQueues(redis, queuePrefix, [route], { ageSeconds: 3600, count: events });
  const ledger = createEventLedger(redis, queuePrefix, 604_800);
  const store = createEventStore({ ledger, fanOut: createFanOut(queues), routesFor: routesMatching([route]) });
  const now = new Date().toISOString();
  for (let index = 0; index < events; index += 500) {
    await Promise.all(
      Array.from({ length: Math.min(500, events - index) }, async () => {
        const id = `evt_${randomBytes(11).toString("hex")}`;
        const user = `auth0|${randomBytes(12).toString("hex")}`;
        const event = { id, source: "urn:auth0:bench", specversion: "1.0" as const, type: "user.updated", time: now, data: { object: { user_id: user, email: "bench@example.com", updated_at: now } } };
        await store.store(event, { origin: "webhook", streamId: "est_bench" });
        await ledger.markDelivered(id, route.name, Date.now());
      }),
    );
  }
  return {
    removeJobs: () => queues.forRoute(route.name).obliterate({ force: true }),
    close: () => queues.close(),
  };
}
