import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it, inject } from "vitest";
import { describeEvent } from "../../src/admin/describe-event.js";
import { dispatchTotal } from "../../src/metrics/registry.js";
import { collectDeadLetters } from "../helpers/collect-dead-letters.js";
import { createDispatchHarness, testRoute, type DispatchHarness } from "../helpers/dispatch-harness.js";
import { userEvent } from "../helpers/fixtures.js";
import { createSinkPool } from "../helpers/sink-server.js";

const redisUrl = inject("redisUrl");

async function counted(route: string, outcome: string): Promise<number> {
  const metric = await dispatchTotal.get();
  return metric.values.find((value) => value.labels.route === route && value.labels.outcome === outcome)?.value ?? 0;
}

/** A user event whose user has this plan (app_metadata.plan), as the CRM recipe filters on. */
function planEvent(plan: string, overrides: Parameters<typeof userEvent>[0] = {}) {
  const event = userEvent(overrides);
  (event.data as { object: Record<string, unknown> }).object.app_metadata = { plan };
  return event;
}

describe("routes that choose and shape", () => {
  let harness: DispatchHarness | undefined;
  const sinks = createSinkPool();
  afterEach(async () => {
    await harness?.close();
    await sinks.closeAll();
  });

  it("when a route has a filter, then only the events it selects get a job there; the others are filtered: counted, no job, shown in the event view", async () => {
    const paying = await sinks.start(() => ({ status: 204 }));
    const everyone = await sinks.start(() => ({ status: 204 }));
    const before = await counted("paying", "filtered");
    harness = await createDispatchHarness(redisUrl, [
      testRoute("paying", paying.url, { filter: { "data.object.app_metadata.plan": { $in: ["pro", "team"] } } }),
      testRoute("everyone", everyone.url),
    ]);
    harness.startDispatcher();
    const free = planEvent("free");
    const pro = planEvent("pro");
    expect(await harness.store.store(free, { origin: "webhook" })).toEqual({ status: "stored", routes: ["everyone"], filtered: ["paying"] });
    expect(await harness.store.store(pro, { origin: "webhook" })).toEqual({ status: "stored", routes: ["paying", "everyone"] });

    await everyone.until((requests) => requests.length === 2);
    await paying.until((requests) => requests.length === 1);
    expect(JSON.parse(paying.requests[0]!.body).id).toBe(pro.id);
    expect(await harness.queues.forRoute("paying").getJob(free.id)).toBeUndefined();
    expect(await counted("paying", "filtered")).toBe(before + 1);
    await expect.poll(async () => (await describeEvent(free.id, harness!))?.routes).toEqual(expect.arrayContaining([{ route: "paying", state: "filtered", attempts: 0 }]));
    expect((await describeEvent(free.id, harness))?.unrouted).toBe(false);
  });

  it("when a route drops test events, then an event with a0purpose test goes to the other routes only", async () => {
    const live = await sinks.start(() => ({ status: 204 }));
    const all = await sinks.start(() => ({ status: 204 }));
    harness = await createDispatchHarness(redisUrl, [testRoute("live", live.url, { testEvents: "drop" }), testRoute("all", all.url)]);
    harness.startDispatcher();
    const test = userEvent({ a0purpose: "test" });
    const real = userEvent();
    expect((await harness.store.store(test, { origin: "webhook" })).filtered).toEqual(["live"]);
    await harness.store.store(real, { origin: "webhook" });
    await all.until((requests) => requests.length === 2);
    await live.until((requests) => requests.length === 1);
    expect(JSON.parse(live.requests[0]!.body).id).toBe(real.id);
  });

  it("when a route has a transform, then its result is the JSON body, signed as sent, with the webhook-id and origin kept", async () => {
    const secret = `whsec_${Buffer.from("0123456789abcdef0123456789abcdef").toString("base64")}`;
    const crm = await sinks.start(() => ({ status: 204 }));
    harness = await createDispatchHarness(redisUrl, [testRoute("crm", crm.url, { secret, transform: '{"email": data.object.email, "externalId": data.object.user_id, "plan": data.object.app_metadata.plan}' })]);
    harness.startDispatcher();
    const event = planEvent("pro");
    await harness.store.store(event, { origin: "webhook" });
    await crm.until((requests) => requests.length === 1);
    const request = crm.requests[0]!;
    expect(JSON.parse(request.body)).toEqual({ email: "nick-testing-21@example.com", externalId: "auth0|679fb1b1e809445f129bc18d", plan: "pro" });
    expect(request.headers["content-type"]).toBe("application/json");
    expect(request.headers["webhook-id"]).toBe(event.id);
    expect(request.headers["x-streamkeeper-origin"]).toBe("webhook");
    expect(() => new Webhook(secret).verify(request.body, request.headers as Record<string, string>)).not.toThrow();
  });

  it("when a transform throws for one event, then that event is a dead letter naming the error, and the next event is delivered", async () => {
    const crm = await sinks.start(() => ({ status: 204 }));
    harness = await createDispatchHarness(redisUrl, [testRoute("crm", crm.url, { concurrency: 1, transform: 'data.object.app_metadata.plan = "broken" ? $error("no contact for a broken plan") : {"email": data.object.email}' })]);
    harness.startDispatcher();
    const broken = planEvent("broken");
    const next = planEvent("pro");
    await harness.store.store(broken, { origin: "webhook" });
    await harness.store.store(next, { origin: "webhook" });

    await crm.until((requests) => requests.length === 1);
    await expect.poll(() => collectDeadLetters(harness!.queues)).toEqual([expect.objectContaining({ eventId: broken.id, route: "crm", failedReason: expect.stringContaining("no contact for a broken plan"), attempts: 1 })]);
    expect(JSON.parse(crm.requests[0]!.body)).toEqual({ email: "nick-testing-21@example.com" });
    expect(crm.requests[0]!.headers["webhook-id"]).toBe(next.id);
  });

  it("when a transform runs past TRANSFORM_TIMEOUT_MS, then that event is a dead letter saying so (not retried), and the next event is delivered", async () => {
    const crm = await sinks.start(() => ({ status: 204 }));
    // Tail-recursive, so no depth limit stops it: only the time bound does.
    const transform = 'data.object.app_metadata.plan = "loop" ? ($spin := function($n) { $n = 0 ? 0 : $spin($n - 1) }; $spin(1e12)) : {"id": id}';
    harness = await createDispatchHarness(redisUrl, [testRoute("crm", crm.url, { concurrency: 1, transform })]);
    harness.startDispatcher({ transformTimeoutMs: 50 });
    const looping = planEvent("loop");
    const next = planEvent("pro");
    await harness.store.store(looping, { origin: "webhook" });
    await harness.store.store(next, { origin: "webhook" });

    await crm.until((requests) => requests.length === 1);
    expect(JSON.parse(crm.requests[0]!.body)).toEqual({ id: next.id });
    await expect.poll(() => collectDeadLetters(harness!.queues)).toEqual([expect.objectContaining({ eventId: looping.id, failedReason: expect.stringContaining("ran past TRANSFORM_TIMEOUT_MS (50 ms)"), attempts: 1 })]);
  });
});
