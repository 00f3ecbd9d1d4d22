import { describe, expect, it, inject } from "vitest";
import { registry } from "../../src/metrics/registry.js";
import type { EventLedger } from "../../src/queue/event-ledger.js";
import { createEventStore } from "../../src/queue/event-store.js";
import { createFanOut } from "../../src/queue/fan-out.js";
import { jobIdFor } from "../../src/queue/job-id.js";
import { routesMatching } from "../../src/routes/route.js";
import { capturedLogger } from "../helpers/captured-logger.js";
import { useCleanup } from "../helpers/cleanup.js";
import { collectDeadLetters } from "../helpers/collect-dead-letters.js";
import { createDispatchHarness, testRoute } from "../helpers/dispatch-harness.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { inspectStore } from "../helpers/inspect-store.js";
import { startRedisCluster } from "../helpers/redis-cluster.js";
import { startTestService } from "../helpers/start-test-service.js";

const redisUrl = inject("redisUrl");
// Below the schema's hour (startTestService's `beyondSchema`): the test waits the TTL out.
const ttlSeconds = 2;
const said = "event id seen again after DEDUPE_TTL_SECONDS";
const adminToken = "dedupe-past-ttl-token";

/** Waits until the ledger has forgotten the id, as it does DEDUPE_TTL_SECONDS after its arrival. */
const untilForgotten = (ledger: EventLedger, eventId: string) => expect.poll(() => ledger.lookup(eventId), { interval: 100 }).toBe("absent");

const delivered = (sink: SinkServer, eventId: string) => sink.requests.filter((request) => request.headers["webhook-id"] === eventId && request.status === 200);

describe("an id that comes again after DEDUPE_TTL_SECONDS, its earlier job still kept", () => {
  const cleanup = useCleanup("each");

  /** The real service (webhook, admission, dispatcher) with a 2 s dedupe TTL, its route `default` the sink; on the run's Redis unless given another. */
  async function serviceWithShortTtl(sink: SinkServer, redis?: string) {
    const logs = capturedLogger();
    const service = await startTestService({ DOWNSTREAM_URL: sink.url, ADMIN_TOKEN: adminToken, ...(redis ? { REDIS_URL: redis } : {}) }, "all", logs.logger, { DEDUPE_TTL_SECONDS: ttlSeconds });
    cleanup.push(() => service.close());
    const store = await inspectStore(service.config);
    cleanup.push(() => store.close());
    const post = async (body: unknown) => (await service.post("/webhooks", JSON.stringify(body))).json() as Promise<unknown>;
    const described = async (eventId: string) => (await fetch(`${service.adminUrl}/admin/events/${eventId}`, { headers: { authorization: `Bearer ${adminToken}` } })).json() as Promise<{ routes: unknown[] }>;
    return { logs, queues: store.queues, ledger: store.ledger, post, described };
  }

  /** A dead letter of the event on route `default`, then the same id past the TTL, the downstream fixed: delivered, the dead letter kept. */
  async function deadLetterThenAgain(redis?: string) {
    // The downstream refuses (a 4xx: a dead letter at once).
    const sink = await startSinkServer(() => ({ status: 400 }));
    cleanup.push(() => sink.close());
    const service = await serviceWithShortTtl(sink, redis);
    const { queues, ledger, post, described } = service;
    const event = userEvent();

    expect(await post(event)).toEqual({ accepted: 1, duplicates: 0 });
    await expect.poll(async () => (await collectDeadLetters(queues)).map((letter) => letter.jobId)).toEqual([jobIdFor(event.id)]);
    expect((await described(event.id)).routes).toEqual([expect.objectContaining({ route: "default", state: "dead_letter" })]);
    await untilForgotten(ledger, event.id);

    // The downstream is fixed; the tenant sends the same id again.
    sink.answer = () => ({});
    expect(await post(event)).toEqual({ accepted: 1, duplicates: 0 });
    await sink.until(() => delivered(sink, event.id).length === 1);

    // The dead letter is still there to replay; the new job has its own id.
    expect((await collectDeadLetters(queues)).map((letter) => letter.jobId)).toEqual([jobIdFor(event.id)]);
    return { ...service, event };
  }

  it("when its earlier arrival is a dead letter of the route, then the new arrival is delivered under a job id of its own, the dead letter stays, and it is counted and said; within the TTL a repeat is still a duplicate", async () => {
    const { logs, queues, ledger, post, described, event } = await deadLetterThenAgain();
    const lines = logs.lines.filter((line) => String(line.msg).startsWith(said));
    expect(lines).toEqual([expect.objectContaining({ level: 30, eventId: event.id, route: "default", heldBy: jobIdFor(event.id), old: "dead_letter" })]);
    const ownJob = await queues.forRoute("default").getJob(String(lines[0]!.jobId));
    expect(ownJob?.id).toMatch(new RegExp(`^${event.id}-replay-`));
    await expect.poll(() => ownJob!.getState()).toBe("completed");
    // What GET /admin/events says of this arrival is its own job's, not the dead letter's.
    await expect.poll(async () => (await described(event.id)).routes).toEqual([expect.objectContaining({ route: "default", state: "delivered", attempts: 1 })]);
    expect(await registry.metrics()).toMatch(/^streamkeeper_events_own_job_id_total\{route="default",old="dead_letter"\} 1$/m);

    // Within the TTL of that arrival the ledger still answers a repeat as a duplicate.
    expect(await post(event)).toEqual({ accepted: 0, duplicates: 1 });
    expect((await ledger.get(event.id))?.duplicates).toBe(1);
  });

  it("when its earlier arrival's delivered job is still kept (removeOnComplete acts only at the route's next completion), then the new arrival is delivered again", async () => {
    const sink = await startSinkServer();
    cleanup.push(() => sink.close());
    // COMPLETED_JOB_RETENTION_SECONDS (an hour) outlives the 2 s TTL: the delivered job stays, as on a quiet route.
    const { logs, queues, ledger, post } = await serviceWithShortTtl(sink);
    const event = userEvent();

    await post(event);
    await sink.until(() => delivered(sink, event.id).length === 1);
    await expect.poll(async () => (await queues.forRoute("default").getJob(jobIdFor(event.id)))?.finishedOn).toBeGreaterThan(0);
    await untilForgotten(ledger, event.id);

    expect(await post(event)).toEqual({ accepted: 1, duplicates: 0 });
    await sink.until(() => delivered(sink, event.id).length === 2);
    expect(logs.lines.filter((line) => String(line.msg).startsWith(said))).toEqual([expect.objectContaining({ eventId: event.id, old: "delivered" })]);
  });

  it("when the event is stored the long way (a cluster's way: ledger check, jobs, claim), then the new arrival past a dead letter is delivered too", async () => {
    const sink = await startSinkServer(() => ({ status: 400 }));
    cleanup.push(() => sink.close());
    const routes = [testRoute("a", sink.url)];
    const harness = await createDispatchHarness(redisUrl, routes, undefined, { ledgerTtlSeconds: ttlSeconds });
    cleanup.push(() => harness.close());
    harness.startDispatcher();
    // No admission: every store takes the long way, as on a Redis that enforces slots.
    const longWay = createEventStore({ ledger: harness.ledger, fanOut: createFanOut(harness.queues), routesFor: routesMatching(routes) });
    const event = userEvent();

    await longWay.store(event, { origin: "webhook" });
    await expect.poll(async () => (await collectDeadLetters(harness.queues)).length).toBe(1);
    await untilForgotten(harness.ledger, event.id);

    sink.answer = () => ({});
    await expect(longWay.store(event, { origin: "reconcile" })).resolves.toEqual({ status: "stored", routes: ["a"] });
    await sink.until(() => delivered(sink, event.id).length === 1);
    expect((await collectDeadLetters(harness.queues)).map((letter) => letter.jobId)).toEqual([jobIdFor(event.id)]);
    await expect(longWay.store(event, { origin: "webhook" })).resolves.toEqual({ status: "duplicate", routes: [] });
  });

  it("when the service runs on a three-master Redis Cluster (the long way for every store), then an id past the TTL whose earlier arrival is a dead letter is delivered too", async () => {
    const cluster = await startRedisCluster(3);
    cleanup.push(() => cluster.stop());
    const { logs, event } = await deadLetterThenAgain(cluster.url);
    expect(logs.lines.filter((line) => String(line.msg).startsWith(said))).toEqual([expect.objectContaining({ eventId: event.id, old: "dead_letter" })]);
  });
});
