import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Redis } from "ioredis";
import type { CloudEvent } from "../../src/events/cloud-event.js";
import { createAdmission } from "../../src/queue/admission.js";
import { createDeliveryQueues } from "../../src/queue/delivery-queues.js";
import { createEventLedger } from "../../src/queue/event-ledger.js";
import { createEventStore, type EventStore } from "../../src/queue/event-store.js";
import { createFanOut } from "../../src/queue/fan-out.js";
import { routesMatching, type Route } from "../../src/routes/route.js";
import { createSinkProbe, type SinkProbe } from "../lib/create-sink-probe.js";
import { createEventSource, type EventSource } from "../lib/event-source.js";
import { startServiceProcess } from "../lib/start-service-process.js";

/** Live delivery latency over one phase: store to the downstream's answer, live events only. */
export interface LivePhase {
  live: number;
  latencyMs: { p50?: number; p99?: number; max?: number };
}

export type FloodResults =
  | {
      status: "measured";
      floodEvents: number;
      liveRate: number;
      liveSeconds: number;
      downstreamMs: number;
      concurrency: number;
      alone: LivePhase;
      withFlood: LivePhase & { lateWaitingAtEnd: number };
      /** with flood p99 ÷ alone p99 (target ≤ 2) */
      ratio?: number;
      /** seconds from the flood's store to its last delivery; undefined when it did not drain within the timeout */
      floodDrainedS?: number;
      /** stored events the sink never got (flood and live) */
      lost: number;
    }
  | { status: "pending"; reason: string };

export interface FloodContext {
  redis: Redis;
  redisUrl: string;
  dataDir: string;
  sinkUrl: string;
  floodEvents: number;
  liveRate: number;
  liveSeconds: number;
  log(message: string): void;
}

const streamId = "est_38ANnv8pQhqsZrX2VFbftv";
/** The downstream's time per request: the route's concurrency then bounds its throughput (10 / 20 ms = 500/s). */
const downstreamMs = 20;
const concurrency = 10;
const dayMs = 86_400_000;

/**
 * A flood never buries the present: live events at a steady rate through one `--role
 * worker` process to a route whose downstream takes 20 ms a request (concurrency 10:
 * at most 500 deliveries a second), first alone, then with `floodEvents` day-old events
 * stored just before them (the late lane). Latency is each live event's store to the
 * downstream's answer; the flood's own events carry no send time and are not in it.
 */
export async function runFlood(context: FloodContext): Promise<FloodResults> {
  const { redis, log } = context;
  await redis.flushall();
  const queuePrefix = "bench-flood";
  const route: Route = { name: "flood", match: ["*"], url: `${context.sinkUrl}/deliver?delayMs=${downstreamMs}`, headers: {}, timeoutMs: 10_000, concurrency };
  const routesFile = join(context.dataDir, "bench-flood-routes.json");
  await writeFile(routesFile, JSON.stringify([route]));
  const queues = createDeliveryQueues(redis, queuePrefix, [route], { ageSeconds: 3600, count: 1000 });
  const ledger = createEventLedger(redis, queuePrefix, 3600);
  const store = createEventStore({ ledger, fanOut: createFanOut(queues), routesFor: routesMatching([route]), admit: createAdmission({ ledger, queues }) });
  const probe = createSinkProbe(context.sinkUrl);
  const source = createEventSource();
  const worker = await startServiceProcess({ role: "worker", redisUrl: context.redisUrl, queuePrefix, dataDir: context.dataDir, env: { ROUTES_FILE: routesFile, LOG_LEVEL: "warn" } });
  try {
    await probe.reset();
    log(`flood: live events at ${context.liveRate}/s for ${context.liveSeconds} s, alone`);
    const alone = await livePhase(context, store, source, probe);
    if (!alone) return { status: "pending", reason: "the live events alone did not all arrive within 60 s" };

    log(`flood: ${context.floodEvents} day-old events stored, then live events at ${context.liveRate}/s for ${context.liveSeconds} s`);
    const floodStarted = performance.now();
    const dayAgo = Date.now() - dayMs;
    for (let index = 0; index < context.floodEvents; index += 500) {
      await Promise.all(Array.from({ length: Math.min(500, context.floodEvents - index) }, (_, offset) => store.store(floodEvent(source, dayAgo + (index + offset) * 1000), { origin: "webhook" })));
    }
    const withFlood = await livePhase(context, store, source, probe);
    if (!withFlood) return { status: "pending", reason: "the live events with the flood did not all arrive within 60 s" };
    const lateWaitingAtEnd = await queues.forRoute("flood").getPrioritizedCount();

    const expected = 2 * context.liveRate * context.liveSeconds + context.floodEvents;
    const drained = await probe.until(expected, 300_000);
    const floodDrainedS = drained ? Math.round((performance.now() - floodStarted) / 100) / 10 : undefined;
    const lost = expected - (await probe.stats()).unique;
    const ratio = alone.latencyMs.p99 && withFlood.latencyMs.p99 ? Math.round((withFlood.latencyMs.p99 / alone.latencyMs.p99) * 100) / 100 : undefined;
    return { status: "measured", floodEvents: context.floodEvents, liveRate: context.liveRate, liveSeconds: context.liveSeconds, downstreamMs, concurrency, alone, withFlood: { ...withFlood, lateWaitingAtEnd }, ratio, floodDrainedS, lost };
  } finally {
    await worker.stop();
    await queues.close();
  }
}

/** Stores live events evenly paced, then waits for each at the sink; undefined when they do not all arrive within 60 s. */
async function livePhase(context: FloodContext, store: EventStore, source: EventSource, probe: SinkProbe): Promise<LivePhase | undefined> {
  await probe.mark();
  const live = Math.round(context.liveRate * context.liveSeconds);
  const started = performance.now();
  for (let index = 0; index < live; index++) {
    const due = started + (index * 1000) / context.liveRate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((ok) => setTimeout(ok, wait));
    await store.store(source.event(streamId) as unknown as CloudEvent, { origin: "webhook" });
  }
  const deadline = Date.now() + 60_000;
  for (;;) {
    const { window } = await probe.stats();
    if (window.timed >= live) return { live, latencyMs: window.latencyMs };
    if (Date.now() > deadline) return undefined;
    await new Promise((ok) => setTimeout(ok, 100));
  }
}

/** A day-old event of the flood: its `time` in the past, and no send time (its latency is not the live one's). */
function floodEvent(source: EventSource, at: number): CloudEvent {
  const event = source.event(streamId, at) as unknown as CloudEvent & { data: { context?: unknown } };
  delete event.data.context;
  return event;
}
