import { Worker } from "bullmq";
import { afterEach, describe, expect, it, inject } from "vitest";
import { jobIdFor } from "../../src/queue/job-id.js";
import type { Route } from "../../src/routes/route.js";
import { deliveryQueueBullPrefix, deliveryQueueName } from "../../src/queue/queue-names.js";
import { closeRedis, createRedis } from "../../src/redis/redis-connection.js";
import { createDispatchHarness, testRoute, type DispatchHarness } from "../helpers/dispatch-harness.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";

const redisUrl = inject("redisUrl");

describe("dispatch: once per route, live first", () => {
  let harness: DispatchHarness | undefined;
  const sinks: SinkServer[] = [];
  afterEach(async () => {
    await harness?.close();
    await Promise.all(sinks.splice(0).map((sink) => sink.close()));
  });

  async function twoRoutes(overrides: Partial<Route> = {}) {
    const a = await startSinkServer();
    const b = await startSinkServer();
    sinks.push(a, b);
    harness = await createDispatchHarness(redisUrl, [testRoute("a", a.url, overrides), testRoute("b", b.url, overrides)]);
    harness.startDispatcher();
    return { a, b, harness };
  }

  const ids = (sink: SinkServer) => sink.requests.map((request) => request.headers["webhook-id"]);

  it("when the webhook delivers an id twice, then each route gets it once", async () => {
    const { a, b, harness } = await twoRoutes();
    const event = userEvent();
    await harness.store.store(event, { origin: "webhook" });
    await Promise.all([a.untilReceived(1), b.untilReceived(1)]);
    await expect(harness.store.store(event, { origin: "webhook" })).resolves.toMatchObject({ status: "duplicate" });

    // A later event on the same routes proves the queues moved past the duplicate.
    const later = userEvent();
    await harness.store.store(later, { origin: "webhook" });
    await Promise.all([a.untilReceived(2), b.untilReceived(2)]);
    expect(ids(a)).toEqual([event.id, later.id]);
    expect(ids(b)).toEqual([event.id, later.id]);
  });

  it("when an event came by webhook and then by reconcile, then each route gets it once, and a forced reconcile sends it again", async () => {
    // One delivery at a time per route: a job queued later is sent after every one before it.
    const { a, b, harness } = await twoRoutes({ concurrency: 1 });
    const event = userEvent();
    await harness.store.store(event, { origin: "webhook" });
    await Promise.all([a.untilReceived(1), b.untilReceived(1)]);
    await expect(harness.store.store(event, { origin: "reconcile" })).resolves.toEqual({ status: "duplicate", routes: [] });

    // A later reconciled event waits at the same priority, behind anything the duplicate could have queued.
    const later = userEvent();
    await harness.store.store(later, { origin: "reconcile" });
    await Promise.all([a.untilReceived(2), b.untilReceived(2)]);
    for (const sink of [a, b]) expect(ids(sink)).toEqual([event.id, later.id]);

    const forced = await harness.store.store(event, { origin: "reconcile", force: true });
    expect(forced).toMatchObject({ status: "stored", routes: ["a", "b"] });
    await Promise.all([a.untilReceived(3), b.untilReceived(3)]);
    for (const sink of [a, b]) {
      expect(ids(sink)).toEqual([event.id, later.id, event.id]);
      expect(sink.requests.map((request) => request.headers["x-streamkeeper-origin"])).toEqual(["webhook", "reconcile", "reconcile"]);
    }
  });

  it("when a forced reconcile's first attempt fails, then its retry is still sent: force holds for every attempt of the job", async () => {
    const { a, harness } = await twoRoutes();
    const event = userEvent();
    await harness.store.store(event, { origin: "webhook" });
    await a.untilReceived(1);
    await expect.poll(() => harness.ledger.deliveredAt(event.id, "a")).toBeGreaterThan(0);

    const answer = a.answer;
    a.answer = (request) => (request.index === 1 ? { status: 503 } : answer(request));
    await harness.store.store(event, { origin: "reconcile", force: true });
    await a.until((requests) => requests.filter((request) => request.status === 200).length === 2);
    expect(a.requests.map((request) => [request.headers["webhook-id"], request.status])).toEqual([
      [event.id, 200],
      [event.id, 503],
      [event.id, 200],
    ]);
  });

  it("when a store stopped between its job and its claim, the job was delivered and the id comes back later, then the route does not get it again", async () => {
    const { a, b, harness } = await twoRoutes();
    const event = userEvent();
    // The first store queued the job for route a, then stopped before claiming the id in
    // the ledger; the job was delivered anyway and has since been removed (retention).
    const first = await harness.queues.forRoute("a").add(event.type, { event, origin: "webhook", receivedAt: Date.now() }, { jobId: jobIdFor(event.id) });
    await a.untilReceived(1);
    await expect.poll(() => harness.ledger.deliveredAt(event.id, "a")).toBeGreaterThan(0);
    await expect.poll(() => first.isCompleted()).toBe(true);
    await first.remove();
    expect(await harness.ledger.has(event.id)).toBe(false);

    await expect(harness.store.store(event, { origin: "reconcile" })).resolves.toMatchObject({ status: "stored", routes: ["a", "b"] });
    await b.untilReceived(1);
    const again = (await harness.queues.forRoute("a").getJob(jobIdFor(event.id)))!;
    await expect.poll(() => again.isCompleted()).toBe(true);
    expect((await harness.queues.forRoute("a").getJob(again.id!))?.returnvalue).toMatchObject({ status: "already_delivered" });
    expect(a.requests).toHaveLength(1);
  });

  it("when a worker delivered an event and died before finishing its job, then the worker that takes the stalled job over does not send it again", async () => {
    const sink = await startSinkServer();
    sinks.push(sink);
    harness = await createDispatchHarness(redisUrl, [testRoute("a", sink.url)]);
    const event = userEvent();
    await harness.store.store(event, { origin: "webhook" });
    // The worker that dies: it takes the job (locked for 300 ms, never renewed), its 2xx is
    // recorded as the dispatcher records one, and it never completes the job.
    const connection = createRedis(redisUrl, "worker", "test-crashed-worker");
    const crashed = new Worker(deliveryQueueName("a"), null, { connection, prefix: deliveryQueueBullPrefix(harness.prefix, "a"), lockDuration: 300, autorun: false });
    try {
      const taken = await crashed.getNextJob("crashed-token", { block: false });
      expect(taken?.id).toBe(jobIdFor(event.id));
      await harness.ledger.markDelivered(event.id, "a", Date.now());
    } finally {
      await crashed.close(true);
      await closeRedis(connection);
    }

    harness.startDispatcher({ lockDurationMs: 300, stalledIntervalMs: 100 });
    const queue = harness.queues.forRoute("a");
    await expect.poll(async () => (await queue.getJob(jobIdFor(event.id)))?.returnvalue?.status, { timeout: 20_000 }).toBe("already_delivered");
    const job = (await queue.getJob(jobIdFor(event.id)))!;
    // Stalled once by the dead worker (again only if the live one stalled past its 300 ms lock).
    expect(job.stalledCounter).toBeGreaterThanOrEqual(1);
    expect(job.attemptsMade).toBe(1);
    expect(sink.requests).toHaveLength(0);
  });

  it("when a delivered job runs again (retried from the dashboard), then it completes without a POST", async () => {
    const { a, harness } = await twoRoutes();
    const event = userEvent();
    await harness.store.store(event, { origin: "webhook" });
    await a.untilReceived(1);
    const job = (await harness.queues.forRoute("a").getJob(jobIdFor(event.id)))!;
    await expect.poll(() => job.isCompleted()).toBe(true);
    await expect.poll(() => harness.ledger.deliveredAt(event.id, "a")).toBeGreaterThan(0);
    const deliveredAt = await harness.ledger.deliveredAt(event.id, "a");

    await job.retry("completed");
    await expect.poll(async () => (await harness.queues.forRoute("a").getJob(job.id!))?.returnvalue?.status).toBe("already_delivered");
    expect(a.requests).toHaveLength(1);
    // The run that sent nothing records no delivery of its own.
    expect(await harness.ledger.deliveredAt(event.id, "a")).toBe(deliveredAt);
  });

  it("when a backlog of reconciled events waits, then a live event stored later is delivered before the rest of it", async () => {
    // The first delivery is held until the live event is stored, so the live event always
    // arrives while the backlog is being worked, however slow the machine.
    let liveStored = () => {};
    const held = new Promise<void>((ok) => (liveStored = ok));
    const sink = await startSinkServer(async (request) => {
      if (request.index === 0) await held;
      return {};
    });
    sinks.push(sink);
    harness = await createDispatchHarness(redisUrl, [testRoute("one", sink.url, { concurrency: 1 })]);
    const backlog = Array.from({ length: 10 }, () => userEvent());
    for (const event of backlog) await harness.store.store(event, { origin: "reconcile" });
    harness.startDispatcher();
    await sink.untilReceived(1);
    const live = userEvent();
    await harness.store.store(live, { origin: "webhook" });
    liveStored();

    await sink.untilReceived(11);
    const order = ids(sink);
    // At most the reconcile job in flight (and one already fetched) go before it.
    expect(order.indexOf(live.id)).toBeLessThanOrEqual(2);
    expect(order.indexOf(live.id)).toBeGreaterThan(0);
  });
});
