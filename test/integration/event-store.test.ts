import { randomUUID } from "node:crypto";
import { outboxFields, parseArchiveRecord, type OutboxEvent } from "../../src/archive/archive-record.js";
import { entityOf } from "../../src/archive/entity-of.js";
import { afterAll, beforeAll, describe, expect, it, inject } from "vitest";
import { archiveOutboxKey, createArchiveOutbox } from "../../src/archive/archive-outbox.js";
import { routesMatching, type Route } from "../../src/routes/route.js";
import { createAdmission } from "../../src/queue/admission.js";
import { createDeliveryQueues, type DeliveryQueues } from "../../src/queue/delivery-queues.js";
import { createEventLedger, type EventLedger } from "../../src/queue/event-ledger.js";
import { createEventStore, type EventStore } from "../../src/queue/event-store.js";
import { createFanOut } from "../../src/queue/fan-out.js";
import { createRedis, untilReady } from "../../src/redis/redis-connection.js";
import { userEvent } from "../helpers/fixtures.js";

const route = (name: string, match: string[]): Route => ({
  name, match, url: "http://127.0.0.1:9/", headers: {}, timeoutMs: 1000, maxAttemptsPerEvent: 3, concurrency: 1,
});

describe.each([
  { way: "the long way (three steps)", admission: false },
  { way: "the admission (one script)", admission: true },
])("event store, $way", ({ admission }) => {
  const redis = createRedis(inject("redisUrl"), "client");
  const prefix = `test-${randomUUID()}`;
  const routes = [route("users", ["user.*"]), route("all", ["*"]), route("orgs", ["organization.*"])];
  let queues: DeliveryQueues;
  let ledger: EventLedger;
  let store: EventStore;

  beforeAll(async () => {
    await untilReady(redis);
    queues = createDeliveryQueues(redis, prefix, routes, { ageSeconds: 60, count: 1000 });
    ledger = createEventLedger(redis, prefix, 60);
    store = createEventStore({ ledger, fanOut: createFanOut(queues), routesFor: routesMatching(routes), admit: admission ? createAdmission({ ledger, queues }) : undefined });
  });
  afterAll(async () => {
    await queues.close();
    redis.disconnect();
  });

  it("when an event is stored, then each matching route has one job and the ledger has the arrival", async () => {
    const event = userEvent();
    await expect(store.store(event, { origin: "webhook", streamId: "est_x" })).resolves.toEqual({ status: "stored", routes: ["users", "all"] });
    expect(await queues.forRoute("users").getJobCounts("wait")).toEqual({ wait: 1 });
    expect(await queues.forRoute("orgs").getJobCounts("wait")).toEqual({ wait: 0 });
    const job = await queues.forRoute("all").getJob(event.id);
    expect(job?.data.event).toEqual(event);
    const record = await ledger.get(event.id);
    expect(record).toMatchObject({ origin: "webhook", streamId: "est_x", type: "user.updated", routes: ["users", "all"], duplicates: 0 });
  });

  it("when the same id arrives again, then it is a duplicate and no job is added, even after the jobs are gone", async () => {
    const event = userEvent();
    await store.store(event, { origin: "webhook" });
    await queues.forRoute("users").obliterate({ force: true });
    await expect(store.store(event, { origin: "reconcile" })).resolves.toEqual({ status: "duplicate", routes: [] });
    expect(await queues.forRoute("users").getJob(event.id)).toBeUndefined();
    expect((await ledger.get(event.id))?.duplicates).toBe(1);
  });

  it("when concurrent requests carry one id, then exactly one is stored", async () => {
    const event = userEvent();
    const results = await Promise.all(Array.from({ length: 10 }, () => store.store(event, { origin: "webhook" })));
    expect(results.filter((result) => result.status === "stored")).toHaveLength(1);
    // The others are told duplicate, with no route: the caller counts nothing queued for them.
    expect(results.filter((result) => result.status !== "stored")).toEqual(new Array(9).fill({ status: "duplicate", routes: [] }));
    expect(await queues.forRoute("all").getJobCountByTypes("wait", "prioritized")).toBeGreaterThanOrEqual(1);
  });

  it("when the ledger holds only route deliveries for an id (a store that stopped between its jobs and its claim, its jobs delivered), then the retry is stored and its jobs ask each route to check its delivery first", async () => {
    const event = userEvent();
    await ledger.markDelivered(event.id, "users", Date.now());
    await expect(store.store(event, { origin: "webhook" })).resolves.toEqual({ status: "stored", routes: ["users", "all"] });
    for (const name of ["users", "all"]) expect((await queues.forRoute(name).getJob(event.id))?.data.recheck).toBe(true);
    // A new id asks for no such check.
    const fresh = userEvent();
    await store.store(fresh, { origin: "webhook" });
    expect((await queues.forRoute("users").getJob(fresh.id))?.data.recheck).toBeFalsy();
    await expect(store.store(event, { origin: "webhook" })).resolves.toEqual({ status: "duplicate", routes: [] });
  });

  it("when a reconcile is forced, then a second job is queued with a lower priority than live events", async () => {
    const event = userEvent({ type: "organization.created" });
    await store.store(event, { origin: "webhook" });
    const forced = await store.store(event, { origin: "reconcile", force: true });
    expect(forced).toEqual({ status: "stored", routes: ["all", "orgs"] });
    const jobs = await queues.forRoute("orgs").getJobs(["wait", "prioritized"]);
    expect(jobs.map((job) => job.data.origin).sort()).toEqual(["reconcile", "webhook"]);
    expect(jobs.find((job) => job.data.origin === "reconcile")?.opts.priority).toBeGreaterThan(0);
    expect((await ledger.get(event.id))?.replays).toBe(1);
  });

  it("when the archive is on, then each stored event's record goes to the archive's outbox once, with what the store knew, a duplicate's none and a forced store's its own", async () => {
    const archivePrefix = `${prefix}-archived`;
    const outboxKey = archiveOutboxKey(archivePrefix);
    const outbox = createArchiveOutbox(redis, archivePrefix);
    const archived = createEventStore({
      ledger,
      fanOut: createFanOut(queues),
      routesFor: routesMatching(routes),
      archive: (record) => outbox([record]),
      admit: admission ? createAdmission({ ledger, queues, outbox: outboxKey ? { key: outboxKey, fieldsOf: outboxFields } : undefined }) : undefined,
    });
    try {
      const event = userEvent();
      await expect(archived.store(event, { origin: "webhook", streamId: "est_x" })).resolves.toEqual({ status: "stored", routes: ["users", "all"] });
      await expect(archived.store(event, { origin: "webhook", streamId: "est_x" })).resolves.toEqual({ status: "duplicate", routes: [] });
      await expect(archived.store(event, { origin: "reconcile", force: true })).resolves.toEqual({ status: "stored", routes: ["users", "all"] });
      const records = (await redis.xrange(outboxKey, "-", "+")).map(([, fields]) => parseArchiveRecord(fields[1], fields[3]) as OutboxEvent);
      const common = { kind: "event", id: event.id, type: event.type, entity: entityOf(event), receivedAt: expect.any(Number), routes: ["users", "all"], eventText: JSON.stringify(event) };
      expect(records).toEqual([
        { ...common, origin: "webhook", stream: "est_x" },
        { ...common, origin: "reconcile", stream: event.a0stream ?? null },
      ]);
      expect((await ledger.get(event.id))?.receivedAt).toBe(records[0]!.receivedAt);
    } finally {
      await redis.del(outboxKey);
    }
  });

  it("when the store is retried after a partial failure, then nothing is added twice", async () => {
    const event = userEvent();
    // The first attempt queued its jobs but never reached the ledger (a fault in between).
    await queues.forRoute("users").add(event.type, { event, origin: "webhook", receivedAt: Date.now() }, { jobId: event.id });
    await expect(store.store(event, { origin: "webhook" })).resolves.toMatchObject({ status: "stored" });
    const jobs = await queues.forRoute("users").getJobs(["wait"]);
    expect(jobs.filter((job) => job.data.event.id === event.id)).toHaveLength(1);
  });
});
