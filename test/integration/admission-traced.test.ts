import { randomUUID } from "node:crypto";
import { outboxFields } from "../../src/archive/archive-record.js";
import { context, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider, type ReadableSpan } from "@opentelemetry/sdk-trace";
import { Queue } from "bullmq";
import { BullMQOtel } from "bullmq-otel";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { archiveOutboxKey } from "../../src/archive/archive-outbox.js";
import { createAdmission } from "../../src/queue/admission.js";
import type { DeliveryJobData } from "../../src/queue/delivery-job.js";
import { createDeliveryQueues, type DeliveryQueue, type DeliveryQueues } from "../../src/queue/delivery-queues.js";
import { createEventLedger } from "../../src/queue/event-ledger.js";
import { createEventStore, type StoreResult } from "../../src/queue/event-store.js";
import { createFanOut } from "../../src/queue/fan-out.js";
import { jobIdFor } from "../../src/queue/job-id.js";
import { deliveryQueueBullPrefix, deliveryQueueName, routeOfQueue } from "../../src/queue/queue-names.js";
import { createRedis, untilReady, type RedisClient } from "../../src/redis/redis-connection.js";
import { routesMatching, type Route } from "../../src/routes/route.js";
import { capturedLogger } from "../helpers/captured-logger.js";
import { useCleanup } from "../helpers/cleanup.js";
import { userEvent } from "../helpers/fixtures.js";
import { startRedisCluster } from "../helpers/redis-cluster.js";

const route = (name: string): Route => ({ name, match: ["*"], url: "http://127.0.0.1:9/", headers: {}, timeoutMs: 1000, maxAttemptsPerEvent: 3, concurrency: 1 });
const routes = [route("a"), route("b")];

/** What an operator reads of a BullMQ add span in a trace: which queue, whether it failed and why, the job it names. */
interface AddSpan {
  name: string;
  /** the message of the exception the span recorded; none when the add went through */
  error?: string;
  jobId?: string;
}

/**
 * The admission with tracing on (OTEL_EXPORTER_OTLP_ENDPOINT set, telemetry/start-tracing.ts):
 * each route's job is built by BullMQ inside its own `add` span, which the admission ends
 * once its script ran. A trace shows what happened to each event: an add span per job
 * added, and one that failed, with why, per job the admission built but did not add.
 */
describe("admission: traced stores", () => {
  const cleanup = useCleanup("each");
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  const tracer = provider.getTracer("admission-traced");
  let redis: RedisClient;

  beforeAll(async () => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    trace.setGlobalTracerProvider(provider);
    redis = createRedis(inject("redisUrl"), "client");
    await untilReady(redis);
  });
  afterAll(async () => {
    redis.disconnect();
    await provider.shutdown();
    trace.disable();
    propagation.disable();
    context.disable();
  });

  /** Each route's queue, traced as the service's are (its telemetry option); `delayed` routes' queues delay their jobs by default. */
  function tracedQueues(connection: RedisClient, prefix: string, delayed: string[] = []): DeliveryQueues {
    const telemetry = new BullMQOtel({ tracerName: "streamkeeper" });
    const made = createDeliveryQueues(connection, prefix, routes, { ageSeconds: 60, count: 1000 }, telemetry);
    const queues = new Map<string, DeliveryQueue>(
      routes.map((each) => [
        each.name,
        delayed.includes(each.name)
          ? new Queue<DeliveryJobData>(deliveryQueueName(each.name), { connection, prefix: deliveryQueueBullPrefix(prefix, each.name), skipWaitingForReady: true, telemetry, defaultJobOptions: { delay: 3_600_000 } })
          : made.forRoute(each.name),
      ]),
    );
    const unused = made.all().filter((queue) => !queues.has(routeOfQueue(queue.name)!) || queues.get(routeOfQueue(queue.name)!) !== queue);
    cleanup.push(async () => {
      for (const queue of queues.values()) await queue.obliterate({ force: true });
      await Promise.all([...unused, ...queues.values()].map((queue) => queue.close()));
    });
    return { connection, forRoute: (name) => queues.get(name)!, liveWindowMs: () => 300_000, all: () => [...queues.values()], close: async () => {} };
  }

  function tracedStore(connection: RedisClient, { delayed = [], outbox = false, logger }: { delayed?: string[]; outbox?: boolean; logger?: ReturnType<typeof capturedLogger>["logger"] } = {}) {
    const prefix = `test-${randomUUID()}`;
    const queues = tracedQueues(connection, prefix, delayed);
    const ledger = createEventLedger(connection, prefix, 600);
    const outboxKey = outbox ? archiveOutboxKey(prefix) : undefined;
    if (outboxKey) cleanup.push(() => redis.del(outboxKey));
    const store = createEventStore({
      ledger,
      fanOut: createFanOut(queues),
      routesFor: routesMatching(routes),
      archive: outboxKey ? async (record) => void (await connection.xadd(outboxKey, "*", "r", JSON.stringify(record))) : undefined,
      admit: createAdmission({ ledger, queues, outbox: outboxKey ? { key: outboxKey, fieldsOf: outboxFields } : undefined, logger }),
    });
    /** A store inside a span of its own (as the receiver's request span), and the add spans under it once `count` have ended. */
    async function traced(event: ReturnType<typeof userEvent>, count: number) {
      const parent = tracer.startSpan("store");
      const outcome: { result?: StoreResult; error?: Error } = await context.with(trace.setSpan(context.active(), parent), () => store.store(event, { origin: "webhook" })).then(
        (result) => ({ result }),
        (error: Error) => ({ error }),
      );
      parent.end();
      const under = () => exporter.getFinishedSpans().filter((span) => span.parentSpanContext?.spanId === parent.spanContext().spanId);
      await expect.poll(() => under().length).toBeGreaterThanOrEqual(count);
      return { ...outcome, parent, spans: under(), adds: under().map(addSpan).sort(byName) };
    }
    return { queues, ledger, outboxKey, traced };
  }

  it("when a new id is admitted, then each route's add span ends once, without error, naming its job, and each job carries its add span's trace context", async () => {
    const { queues, traced } = tracedStore(redis);
    const event = userEvent();
    const { result, parent, spans, adds } = await traced(event, 2);
    expect(result).toEqual({ status: "stored", routes: ["a", "b"] });
    expect(adds).toEqual(["a", "b"].map((name) => ({ name: `add deliver-${name}.user.updated`, jobId: jobIdFor(event.id) })));
    for (const name of ["a", "b"]) {
      const span = spans.find((each) => each.name === `add deliver-${name}.user.updated`)!;
      const job = await queues.forRoute(name).getJob(jobIdFor(event.id));
      // BullMQ keeps the producer's context in the job's options (`telemetry.metadata`), for the worker's process span.
      const { traceparent } = JSON.parse(job!.opts.telemetry!.metadata!) as { traceparent: string };
      expect(traceparent).toBe(`00-${parent.spanContext().traceId}-${span.spanContext().spanId}-01`);
    }
  });

  it("when a known id arrives again, then its add spans end without error, as BullMQ's add of a job it has already ends", async () => {
    const { traced } = tracedStore(redis);
    const event = userEvent();
    await traced(event, 2);
    const again = await traced(event, 2);
    expect(again.result).toEqual({ status: "duplicate", routes: [] });
    expect(again.adds).toEqual(["a", "b"].map((name) => ({ name: `add deliver-${name}.user.updated`, jobId: jobIdFor(event.id) })));
  });

  it("when the ledger holds only route deliveries for the id, then the admission's adds end in error (not added: recheck) and the long way's adds, one per route, end without error", async () => {
    const { ledger, queues, traced } = tracedStore(redis);
    const event = userEvent();
    await ledger.markDelivered(event.id, "a", Date.now());
    const { result, adds } = await traced(event, 4);
    expect(result).toEqual({ status: "stored", routes: ["a", "b"] });
    expect(adds).toEqual(
      ["a", "b"].flatMap((name) => [
        { name: `add deliver-${name}.user.updated`, jobId: jobIdFor(event.id) },
        { name: `add deliver-${name}.user.updated`, error: "not added: recheck" },
      ]),
    );
    for (const name of ["a", "b"]) expect((await queues.forRoute(name).getJob(jobIdFor(event.id)))?.data.recheck).toBe(true);
  });

  it("when Redis refuses the admission's script, then the store fails and each route's add span ends with Redis's error", async () => {
    const { ledger, outboxKey, traced } = tracedStore(redis, { outbox: true });
    await redis.set(outboxKey!, "not a stream");
    const event = userEvent();
    const { error, adds } = await traced(event, 2);
    expect(error?.message).toMatch(/WRONGTYPE/);
    expect(adds).toHaveLength(2);
    for (const [index, name] of ["a", "b"].entries()) {
      expect(adds[index]!.name).toBe(`add deliver-${name}.user.updated`);
      expect(adds[index]!.error).toBe(error!.message);
    }
    expect(await ledger.lookup(event.id)).toBe("absent");
  });

  it("when BullMQ builds one route's job with a script the admission does not run (a delayed job), then the event is stored the long way, both routes' admission adds end in error, and nothing is logged", async () => {
    const { logger, lines } = capturedLogger("info");
    const { queues, ledger, traced } = tracedStore(redis, { delayed: ["a"], logger });
    const event = userEvent();
    const { result, adds } = await traced(event, 4);
    expect(result).toEqual({ status: "stored", routes: ["a", "b"] });
    expect(adds).toEqual([
      { name: "add deliver-a.user.updated", jobId: jobIdFor(event.id) },
      { name: "add deliver-a.user.updated", error: "not added: BullMQ chose a script the admission does not run" },
      { name: "add deliver-b.user.updated", jobId: jobIdFor(event.id) },
      { name: "add deliver-b.user.updated", error: "not added: stored the long way" },
    ]);
    expect(await queues.forRoute("a").getJobCounts("delayed", "wait")).toEqual({ delayed: 1, wait: 0 });
    expect(await queues.forRoute("b").getJobCounts("delayed", "wait")).toEqual({ delayed: 0, wait: 1 });
    expect(await ledger.lookup(event.id)).toBe("arrived");
    // A route the admission could add for: the long way is taken for this event, not said as BullMQ's change.
    expect(lines).toEqual([]);
  });

  it("when BullMQ builds every route's job with a script the admission does not run, then each event is stored the long way and a warning says so once", async () => {
    const { logger, lines } = capturedLogger("info");
    const { queues, traced } = tracedStore(redis, { delayed: ["a", "b"], logger });
    const events = [userEvent(), userEvent(), userEvent()];
    for (const event of events) expect((await traced(event, 4)).result).toEqual({ status: "stored", routes: ["a", "b"] });
    for (const name of ["a", "b"]) expect(await queues.forRoute(name).getJobCounts("delayed")).toEqual({ delayed: 3 });
    await expect(traced(events[0]!, 2).then(({ result }) => result)).resolves.toEqual({ status: "duplicate", routes: [] });
    expect(lines.map(({ level, msg }) => ({ level, msg }))).toEqual([
      {
        level: 40, // warn
        msg: 'admission: the installed BullMQ builds its jobs in a way the one-round-trip admission does not know; new events are stored the long way (three round trips each); see docs/architecture.md, "Admission"',
      },
    ]);
  });

  it("when BullMQ builds every job with a script the admission does not run and no logger is given, then the events are stored the long way", async () => {
    const { queues, traced } = tracedStore(redis, { delayed: ["a", "b"] });
    for (const event of [userEvent(), userEvent()]) expect((await traced(event, 4)).result).toEqual({ status: "stored", routes: ["a", "b"] });
    for (const name of ["a", "b"]) expect(await queues.forRoute(name).getJobCounts("delayed")).toEqual({ delayed: 2 });
  });

  it("when a single endpoint enforces slots (a cluster node reached directly), then the admission is tried once (its adds end in error: not added: unsupported) and later stores build no job for it", async () => {
    const cluster = await startRedisCluster(1);
    cleanup.push(() => cluster.stop());
    const direct = createRedis(cluster.nodes[0]!.url, "client");
    cleanup.push(async () => direct.disconnect());
    await untilReady(direct);
    const { traced } = tracedStore(direct);
    const first = userEvent();
    const tried = await traced(first, 4);
    expect(tried.result).toEqual({ status: "stored", routes: ["a", "b"] });
    expect(tried.adds).toEqual(
      ["a", "b"].flatMap((name) => [
        { name: `add deliver-${name}.user.updated`, jobId: jobIdFor(first.id) },
        { name: `add deliver-${name}.user.updated`, error: "not added: unsupported" },
      ]),
    );
    const second = userEvent();
    const later = await traced(second, 2);
    expect(later.result).toEqual({ status: "stored", routes: ["a", "b"] });
    expect(later.adds).toEqual(["a", "b"].map((name) => ({ name: `add deliver-${name}.user.updated`, jobId: jobIdFor(second.id) })));
  });

  it("when the store runs through a cluster client, then the admission builds no job: each event's adds are the long way's, without error", async () => {
    // Three masters: a one-node cluster announces no address of its own to a cluster client.
    const cluster = await startRedisCluster(3);
    cleanup.push(() => cluster.stop());
    const client = createRedis(cluster.url, "client");
    cleanup.push(async () => client.disconnect());
    await untilReady(client);
    const { traced } = tracedStore(client);
    for (const event of [userEvent(), userEvent()]) {
      const stored = await traced(event, 2);
      expect(stored.result).toEqual({ status: "stored", routes: ["a", "b"] });
      expect(stored.adds).toEqual(["a", "b"].map((name) => ({ name: `add deliver-${name}.user.updated`, jobId: jobIdFor(event.id) })));
    }
  });
});

function addSpan(span: ReadableSpan): AddSpan {
  const error = span.events.find((event) => event.name === "exception")?.attributes?.["exception.message"];
  const jobId = span.attributes["bullmq.job.id"];
  return { name: span.name, ...(error === undefined ? {} : { error: String(error) }), ...(jobId === undefined ? {} : { jobId: String(jobId) }) };
}

function byName(a: AddSpan, b: AddSpan): number {
  return a.name.localeCompare(b.name) || (a.error ?? "").localeCompare(b.error ?? "");
}
