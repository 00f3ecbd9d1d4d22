import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it, inject } from "vitest";
import { describeEvent } from "../../src/admin/describe-event.js";
import { collectDeadLetters } from "../helpers/collect-dead-letters.js";
import { replayDeadLetters } from "../../src/admin/replay-dead-letters.js";
import { dispatchTotal } from "../../src/metrics/registry.js";
import { createDispatchHarness, testRoute, type DispatchHarness } from "../helpers/dispatch-harness.js";
import { userEvent } from "../helpers/fixtures.js";
import { createSinkPool, type SinkAnswer } from "../helpers/sink-server.js";

const redisUrl = inject("redisUrl");

async function counted(route: string, outcome: string): Promise<number> {
  const metric = await dispatchTotal.get();
  return metric.values.find((value) => value.labels.route === route && value.labels.outcome === outcome)?.value ?? 0;
}

describe("dispatch: delivery", () => {
  let harness: DispatchHarness | undefined;
  const sinks = createSinkPool();
  const sink = sinks.start;
  afterEach(async () => {
    await harness?.close();
    await sinks.closeAll();
  });

  it("when a route fails its first 3 attempts with 503, then it gets the event exactly once, with one webhook-id throughout", async () => {
    const downstream = await sink((request) => (request.index < 3 ? { status: 503, body: "busy" } : { status: 204 }));
    harness = await createDispatchHarness(redisUrl, [testRoute("flaky", downstream.url)]);
    harness.startDispatcher();
    const event = userEvent();
    await harness.store.store(event, { origin: "webhook", streamId: "est_1" });

    await downstream.until((requests) => requests.some((request) => request.status === 204));
    const job = await harness.queues.forRoute("flaky").getJob(event.id);
    await expect.poll(() => job?.isCompleted()).toBe(true);
    expect(downstream.requests).toHaveLength(4);
    expect(downstream.requests.map((request) => request.headers["webhook-id"])).toEqual(Array(4).fill(event.id));
    for (const request of downstream.requests) {
      expect(request.headers["content-type"]).toBe("application/cloudevents+json");
      expect(request.headers["x-streamkeeper-origin"]).toBe("webhook");
      expect(JSON.parse(request.body)).toEqual(event);
    }
    expect(await counted("flaky", "retry")).toBe(3);
    expect(await counted("flaky", "delivered")).toBe(1);
    expect(await harness.ledger.deliveredAt(event.id, "flaky")).toBeGreaterThan(0);
    const described = await describeEvent(event.id, harness);
    expect(described).toMatchObject({
      eventId: event.id,
      type: "user.updated",
      arrival: { origin: "webhook", streamId: "est_1", duplicates: 0, replays: 0 },
      routes: [{ route: "flaky", state: "delivered", attempts: 4, lastError: "downstream answered 503: busy" }],
    });
    expect(described?.routes[0]?.deliveredAt).toMatch(/^\d{4}-/);
    expect(await describeEvent("evt_unknown", harness)).toBeUndefined();
  });

  it("when a route answers 400, then the event is a dead letter after one attempt, and a replay after the fix delivers it", async () => {
    const downstream = await sink(() => ({ status: 400, body: '{"error":"missing field"}' }));
    harness = await createDispatchHarness(redisUrl, [testRoute("strict", downstream.url, { maxAttemptsPerEvent: 3 })]);
    harness.startDispatcher();
    const event = userEvent();
    await harness.store.store(event, { origin: "webhook" });

    const job = await harness.queues.forRoute("strict").getJob(event.id);
    await expect.poll(() => job?.isFailed()).toBe(true);
    expect(downstream.requests).toHaveLength(1);
    const [letter] = await collectDeadLetters(harness.queues);
    expect(letter).toMatchObject({
      route: "strict", jobId: event.id, eventId: event.id, type: "user.updated", origin: "webhook", attempts: 1,
      failedReason: 'downstream answered 400: {"error":"missing field"}',
    });
    expect((await describeEvent(event.id, harness))?.routes).toMatchObject([{ route: "strict", state: "dead_letter", attempts: 1 }]);
    expect(await counted("strict", "dead_letter")).toBe(1);

    downstream.answer = () => ({ status: 200 });
    await expect(replayDeadLetters(harness.queues, { ids: ["strict/nope"] })).resolves.toEqual({ replayed: 0, unknown: ["strict/nope"] });
    await expect(replayDeadLetters(harness.queues, { ids: [event.id] })).resolves.toEqual({ replayed: 1, unknown: [] });
    await downstream.until((requests) => requests.some((request) => request.status === 200));
    await expect.poll(() => job?.isCompleted()).toBe(true);
    expect(downstream.requests.map((request) => request.headers["webhook-id"])).toEqual([event.id, event.id]);
    expect(await collectDeadLetters(harness.queues)).toEqual([]);
  });

  it("when an exhausted dead letter is replayed, then it gets a fresh set of attempts", async () => {
    const downstream = await sink(() => ({ status: 503 }));
    harness = await createDispatchHarness(redisUrl, [testRoute("down", downstream.url, { maxAttemptsPerEvent: 2 })]);
    harness.startDispatcher();
    const event = userEvent();
    await harness.store.store(event, { origin: "webhook" });
    const job = await harness.queues.forRoute("down").getJob(event.id);
    await expect.poll(() => job?.isFailed()).toBe(true);
    expect(downstream.requests).toHaveLength(2);

    // Still down: the replay must make both attempts again, not just one.
    await replayDeadLetters(harness.queues, { all: true });
    await downstream.untilReceived(4);
    await expect.poll(async () => (await collectDeadLetters(harness!.queues)).map((letter) => letter.attempts)).toEqual([2]);
    expect(downstream.requests).toHaveLength(4);
  });

  it("when a dead letter was failed by a worker whose clock runs ahead of ours (after the replay began, by its clock), then replay --all still replays it, once", async () => {
    const downstream = await sink(() => ({ status: 400 }));
    harness = await createDispatchHarness(redisUrl, [testRoute("ahead", downstream.url, { maxAttemptsPerEvent: 1 })]);
    harness.startDispatcher();
    await harness.store.store(userEvent(), { origin: "webhook" });
    const queue = harness.queues.forRoute("ahead");
    await expect.poll(() => queue.getFailedCount()).toBe(1);
    // As a worker a minute ahead records it: its finishedOn, and its score in the failed set.
    const [id] = await queue.getRanges(["failed"]);
    const future = Date.now() + 60_000;
    const client = harness.queues.connection;
    await client.hset(queue.toKey(id!), "finishedOn", future);
    await client.zadd(queue.keys.failed!, future, id!);
    downstream.answer = () => ({ status: 200 });
    await expect(replayDeadLetters(harness.queues, { all: true })).resolves.toEqual({ replayed: 1, unknown: [] });
    await downstream.untilReceived(2);
    await expect.poll(() => queue.getCompletedCount()).toBe(1);
  });

  it("when a route refuses connections or does not answer in time, then each attempt is retried and the reason kept", async () => {
    // Port 9 (discard) listens nowhere here, as everywhere in these tests: a port picked
    // free and closed again could be taken by a parallel test before the attempt.
    const closedPort = 9;
    const silent = await sink(() => new Promise<SinkAnswer>(() => {})); // never answers
    harness = await createDispatchHarness(redisUrl, [
      testRoute("refused", `http://127.0.0.1:${closedPort}/`, { maxAttemptsPerEvent: 2 }),
      // Long enough for the sink (in this process) to have read each request before the
      // attempt gives up on its answer, however busy the event loop.
      testRoute("silent", silent.url, { maxAttemptsPerEvent: 2, timeoutMs: 1000 }),
    ]);
    harness.startDispatcher();
    const event = userEvent();
    await harness.store.store(event, { origin: "webhook" });

    await expect.poll(async () => (await collectDeadLetters(harness!.queues)).length).toBe(2);
    const letters = await collectDeadLetters(harness.queues);
    expect(letters.find((letter) => letter.route === "refused")).toMatchObject({
      attempts: 2, failedReason: `POST http://127.0.0.1:${closedPort} failed: ECONNREFUSED`,
    });
    expect(letters.find((letter) => letter.route === "silent")).toMatchObject({
      attempts: 2, failedReason: "no answer within 1000 ms (the route's timeoutMs)",
    });
    expect(silent.requests).toHaveLength(2);
  });

  it("when a 429 carries Retry-After: 2, then the next attempt waits about two seconds", async () => {
    // Two seconds, not one: the poll below must see the job between its attempts on a loaded machine.
    const downstream = await sink((request) => (request.index === 0 ? { status: 429, headers: { "retry-after": "2" } } : {}));
    harness = await createDispatchHarness(redisUrl, [testRoute("limited", downstream.url)]);
    harness.startDispatcher();
    const event = userEvent();
    await harness.store.store(event, { origin: "webhook" });

    await downstream.untilReceived(1);
    await expect
      .poll(async () => (await describeEvent(event.id, harness!))?.routes)
      .toEqual([{ route: "limited", state: "retrying", attempts: 1, lastError: "downstream answered 429" }]);
    const [first, second] = await downstream.untilReceived(2);
    expect(second!.receivedAt - first!.receivedAt).toBeGreaterThanOrEqual(1950);
  });

  it("when one route is down, then another receives every event without waiting for it", async () => {
    let release = () => {};
    const held = new Promise<void>((ok) => (release = ok));
    const down = await sink(async () => {
      await held; // hold the first request open: the route is stuck
      return { status: 503 };
    });
    const up = await sink();
    harness = await createDispatchHarness(redisUrl, [
      testRoute("down", down.url, { concurrency: 1, timeoutMs: 10_000 }),
      testRoute("up", up.url, { concurrency: 2 }),
    ]);
    harness.startDispatcher();
    const events = Array.from({ length: 20 }, () => userEvent());
    for (const event of events) await harness.store.store(event, { origin: "webhook" });

    await up.until((requests) => requests.filter((request) => request.status === 200).length === 20);
    expect(new Set(up.requests.map((request) => request.headers["webhook-id"]))).toEqual(new Set(events.map((event) => event.id)));
    expect(down.requests).toHaveLength(1);
    release();
  });

  it("when an event id has characters a header cannot carry, then it is delivered under its percent-encoded id, signed as such", async () => {
    const downstream = await sink();
    const secret = `whsec_${Buffer.from("a secret of thirty-two bytes!!!!").toString("base64")}`;
    harness = await createDispatchHarness(redisUrl, [testRoute("unicode", downstream.url, { secret })]);
    harness.startDispatcher();
    const event = { ...userEvent(), id: "evt_事件 1" };
    await harness.store.store(event, { origin: "webhook" });
    const [request] = await downstream.untilReceived(1);
    expect(request!.headers["webhook-id"]).toBe("evt_%E4%BA%8B%E4%BB%B6%201");
    expect(JSON.parse(request!.body).id).toBe("evt_事件 1");
    expect(() => new Webhook(secret).verify(request!.body, request!.headers as Record<string, string>)).not.toThrow();
  });

  it("when event ids start or end with a character outside visible ASCII, then those are percent-encoded in the webhook-id, and ids of visible ASCII up to its edges go as they are", async () => {
    const downstream = await sink();
    harness = await createDispatchHarness(redisUrl, [testRoute("edges", downstream.url)]);
    harness.startDispatcher();
    // "|", ":" and "#" are visible ASCII that percent-encoding would change: they must go as they are.
    const ids = [" evt_leading", "evt_trailing ", "evt_del\u007f", "!evt:visible|#~"];
    for (const id of ids) await harness.store.store({ ...userEvent(), id }, { origin: "webhook" });
    const requests = await downstream.untilReceived(ids.length);
    expect(requests.map((request) => request.headers["webhook-id"]).sort()).toEqual(["!evt:visible|#~", "%20evt_leading", "evt_del%7F", "evt_trailing%20"].sort());
  });

  it("when a route has a secret, then every attempt is signed and the standardwebhooks package verifies it", async () => {
    const secret = `whsec_${Buffer.from("0123456789abcdef0123456789abcdef").toString("base64")}`;
    const downstream = await sink((request) => (request.index === 0 ? { status: 500 } : {}));
    harness = await createDispatchHarness(redisUrl, [
      testRoute("signed", downstream.url, { secret, headers: { Authorization: "Bearer downstream-token", "Content-Type": "text/plain" } }),
    ]);
    harness.startDispatcher();
    const event = userEvent();
    await harness.store.store(event, { origin: "reconcile" });

    const requests = await downstream.untilReceived(2);
    const verifier = new Webhook(secret);
    for (const request of requests) {
      const headers = request.headers as Record<string, string>;
      expect(verifier.verify(request.body, headers)).toEqual(event);
      expect(headers.authorization).toBe("Bearer downstream-token");
      // Ours win over a route header of another case.
      expect(headers["content-type"]).toBe("application/cloudevents+json");
      expect(headers["x-streamkeeper-origin"]).toBe("reconcile");
    }
  });
});
