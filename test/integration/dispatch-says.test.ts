import { afterEach, describe, expect, inject, it } from "vitest";
import { dispatchTotal } from "../../src/metrics/registry.js";
import { jobIdFor } from "../../src/queue/job-id.js";
import { capturedLogger } from "../helpers/captured-logger.js";
import { createDispatchHarness, testRoute, type DispatchHarness } from "../helpers/dispatch-harness.js";
import { userEvent } from "../helpers/fixtures.js";
import { createSinkPool } from "../helpers/sink-server.js";

const redisUrl = inject("redisUrl");

/**
 * README "Routes": what a delivery sends besides the event (our headers over a
 * route's own, whatever their case) and what it says at each outcome: a retry at info, a
 * dead letter at warn with the attempts made and allowed, an id already delivered at info,
 * a delivery at debug.
 */
describe("dispatch: what a delivery sends and says", () => {
  let harness: DispatchHarness | undefined;
  const sinks = createSinkPool();
  const sink = sinks.start;
  const counted = async (route: string, outcome: string) =>
    (await dispatchTotal.get()).values.find((value) => value.labels.route === route && value.labels.outcome === outcome)?.value ?? 0;
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
    await sinks.closeAll();
  });

  it("when a route sets headers, some named like ours in another case, then each request carries the route's own headers and ours (content type, user agent, origin, webhook-id), ours winning", async () => {
    const downstream = await sink();
    const headers = { "X-Tenant-Key": "k-1", "Content-Type": "text/plain", "USER-AGENT": "not-us", "Webhook-Id": "forged" };
    harness = await createDispatchHarness(redisUrl, [testRoute("headed", downstream.url, { headers })]);
    harness.startDispatcher();
    const event = userEvent();
    await harness.store.store(event, { origin: "reconcile" });
    const [request] = await downstream.untilReceived(1);
    expect(request!.headers).toMatchObject({
      "x-tenant-key": "k-1",
      "content-type": "application/cloudevents+json",
      "user-agent": "streamkeeper",
      "x-streamkeeper-origin": "reconcile",
      "webhook-id": event.id,
    });
    expect(request!.method).toBe("POST");
    expect(JSON.parse(request!.body)).toEqual(event);
  });

  it("when attempts fail and the last one is spent, then each retry is said at info with its reason and attempt, and the dead letter at warn with the attempts made and allowed", async () => {
    const downstream = await sink(() => ({ status: 503, body: "busy" }));
    const logs = capturedLogger("debug");
    harness = await createDispatchHarness(redisUrl, [testRoute("says", downstream.url, { maxAttemptsPerEvent: 3 })]);
    harness.startDispatcher({ logger: logs.logger });
    const event = userEvent();
    await harness.store.store(event, { origin: "webhook" });
    await expect.poll(() => harness!.queues.forRoute("says").getJobState(jobIdFor(event.id))).toBe("failed");

    const about = logs.lines.filter((line) => line.eventId === event.id);
    const retries = about.filter((line) => line.level === 30 && line.msg === "delivery failed; it will be retried");
    expect(retries.map((line) => line.attempt)).toEqual([1, 2]);
    for (const line of retries) expect(line).toMatchObject({ route: "says", jobId: jobIdFor(event.id), reason: "downstream answered 503: busy" });
    const dead = about.filter((line) => line.level === 40);
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({ route: "says", attempt: 3, attempts: 3, maxAttempts: 3, reason: "downstream answered 503: busy", msg: "delivery failed for good: the event is a dead letter of this route" });
    expect(dead[0]).not.toHaveProperty("retryWindowMs");
    expect(about.some((line) => line.msg === "event delivered")).toBe(false);
    expect(await counted("says", "retry")).toBe(2);
    expect(await counted("says", "dead_letter")).toBe(1);
  });

  it("when a route has no maxAttemptsPerEvent and answers a definite refusal, then the dead letter's warning gives the attempts made and no maximum", async () => {
    const downstream = await sink(() => ({ status: 422, body: "no" }));
    const logs = capturedLogger("info");
    const route = testRoute("unbounded", downstream.url);
    delete route.maxAttemptsPerEvent;
    harness = await createDispatchHarness(redisUrl, [route]);
    harness.startDispatcher({ logger: logs.logger });
    const event = userEvent();
    await harness.store.store(event, { origin: "webhook" });
    await expect.poll(() => logs.lines.find((line) => line.eventId === event.id && line.level === 40)).toMatchObject({ attempts: 1, reason: "downstream answered 422: no" });
    expect(logs.lines.find((line) => line.eventId === event.id && line.level === 40)).not.toHaveProperty("maxAttempts");
    expect(downstream.requests).toHaveLength(1);
  });

  it("when an event is delivered, then a debug line says so with the answer's status, and an id already delivered that runs again is said at info with when, never sent again", async () => {
    const downstream = await sink(() => ({ status: 201 }));
    const logs = capturedLogger("debug");
    harness = await createDispatchHarness(redisUrl, [testRoute("twice", downstream.url)]);
    harness.startDispatcher({ logger: logs.logger });
    const event = userEvent();
    await harness.store.store(event, { origin: "webhook" });
    const queue = harness.queues.forRoute("twice");
    await expect.poll(() => queue.getJobState(jobIdFor(event.id))).toBe("completed");
    await expect.poll(() => logs.lines.find((line) => line.eventId === event.id && line.msg === "event delivered")).toMatchObject({ level: 20, route: "twice", status: 201 });
    const deliveredAt = await harness.ledger.deliveredAt(event.id, "twice");
    expect(deliveredAt).toBeGreaterThan(0);

    const job = (await queue.getJob(jobIdFor(event.id)))!;
    await job.retry("completed");
    await expect.poll(() => logs.lines.find((line) => line.eventId === event.id && line.level === 30 && line.msg === "event already delivered to this route; not sent again")).toMatchObject({
      route: "twice",
      deliveredAt: new Date(deliveredAt!).toISOString(),
    });
    expect(downstream.requests).toHaveLength(1);
  });
});
