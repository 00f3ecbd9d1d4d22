import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { CloudEvent } from "../../src/events/cloud-event.js";
import { createEntityVersions } from "../../src/queue/entity-versions.js";
import { createRedis, untilReady } from "../../src/redis/redis-connection.js";
import { createDispatchHarness, testRoute, type DispatchHarness } from "../helpers/dispatch-harness.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";

const dayMs = 86_400_000;
const floodSize = 300;
const liveCount = 12;
const concurrency = 4;

/** A user state: `updated_at` (and `time`) at `at`. */
function userState(userId: string, at: number, kind: string): CloudEvent {
  const time = new Date(at).toISOString();
  return userEvent({ time, data: { object: { user_id: userId, updated_at: time, kind } } });
}

/**
 * A flood never buries the present (README.md#routes, liveWindowSeconds): a day-old
 * backlog and live events on one rate-limited dropStale route. Live events go ahead of the
 * flood; the flood is delivered whole afterwards, each event once, and an older state of a
 * user never follows a newer one even where the older one waited in the late lane.
 */
describe("live and late lanes on a rate-limited route", () => {
  const redisUrl = inject("redisUrl");
  let sink: SinkServer;
  let harness: DispatchHarness;
  let versionsRedis: ReturnType<typeof createRedis>;

  beforeAll(async () => {
    sink = await startSinkServer();
    harness = await createDispatchHarness(redisUrl, [testRoute("crm", sink.url, { concurrency, ratePerSecond: 50, dropStale: true, liveWindowSeconds: 300 })]);
    versionsRedis = createRedis(redisUrl, "worker", "test-flood-versions");
    await untilReady(versionsRedis);
  });

  afterAll(async () => {
    await harness?.close();
    versionsRedis?.disconnect();
    await sink?.close();
  });

  it("when a day of events floods in and live ones follow, then each live event overtakes the flood, and every old event is then delivered once or skipped as older than the live state", async () => {
    harness.startDispatcher({ entityVersions: createEntityVersions(versionsRedis, harness.prefix, 600) });
    const now = Date.now();
    // One state per flooded user, a day old; the live events' users are new, but every
    // third is a flooded user's newer state.
    const flood = Array.from({ length: floodSize }, (_, index) => userState(`auth0|flood-${index}`, now - dayMs + index * 1000, "flood"));
    for (const event of flood) await harness.store.store(event, { origin: "webhook" });
    const floodIds = new Set(flood.map((event) => event.id));
    const floodSent = () => sink.requests.filter((request) => floodIds.has(String(request.headers["webhook-id"]))).length;

    /** Per live event: the flood deliveries the sink had when it was stored, and when it arrived at the sink. */
    const seen: Array<{ id: string; floodBefore: number; floodAtArrival?: number }> = [];
    const overlapping: string[] = [];
    for (let index = 0; index < liveCount; index++) {
      // Paced by the flood's own progress, not by the clock: one live event every 10 flood deliveries.
      await sink.until(() => floodSent() >= (index + 1) * 10);
      const user = index % 3 === 0 ? `auth0|flood-${floodSize - 1 - index}` : `auth0|live-${index}`;
      if (user.includes("flood")) overlapping.push(user);
      const event = userState(user, Date.now(), "live");
      seen.push({ id: event.id, floodBefore: floodSent() });
      await harness.store.store(event, { origin: "webhook" });
      await sink.until((requests) => requests.some((request) => request.headers["webhook-id"] === event.id));
      seen.at(-1)!.floodAtArrival = floodSent();
    }

    // Each live event waited at most for the flood deliveries already in flight (the
    // route's concurrency), never behind the flood's queue.
    const overtook = seen.map((live) => live.floodAtArrival! - live.floodBefore);
    expect(overtook.every((count) => count <= 2 * concurrency), `flood deliveries between a live event's store and its delivery: ${overtook.join(", ")}`).toBe(true);
    expect(seen.at(-1)!.floodAtArrival!, "the flood was still waiting when the last live event arrived").toBeLessThan(floodSize / 2);

    // Then the flood drains: every old event once, except a flooded user's older state
    // that the route skipped as stale because that user's live state went first.
    const queue = harness.queues.forRoute("crm");
    await expect.poll(async () => {
      const counts = await queue.getJobCounts("wait", "prioritized", "delayed", "active");
      return Object.values(counts).reduce((sum, n) => sum + n, 0);
    }, { timeout: 60_000, interval: 200 }).toBe(0);
    const ids = sink.requests.map((request) => String(request.headers["webhook-id"]));
    expect(new Set(ids).size, "no event delivered twice").toBe(ids.length);
    const missing = flood.filter((event) => !ids.includes(event.id)).map((event) => (event.data as { object: { user_id: string } }).object.user_id);
    expect(missing.every((user) => overlapping.includes(user)), `flood events never delivered: ${missing.join(", ")}`).toBe(true);
    expect(ids.length).toBe(floodSize - missing.length + liveCount);
    // dropStale across lanes: per user, the states arrived in the order of their age.
    const arrived = new Map<string, number[]>();
    for (const request of sink.requests) {
      const { user_id: user, updated_at: at } = (JSON.parse(request.body) as { data: { object: { user_id: string; updated_at: string } } }).data.object;
      arrived.set(user, [...(arrived.get(user) ?? []), Date.parse(at)]);
    }
    const backwards = [...arrived].filter(([, ages]) => ages.some((age, index) => index > 0 && age < ages[index - 1]!));
    expect(backwards.map(([user]) => user)).toEqual([]);
    expect(missing.length, "a live state went ahead of its user's flooded one and the older one was skipped").toBeGreaterThan(0);
  }, 120_000);

  it("when a reconciled, a late and a live event wait together, then the route takes the live one first, then the late one, then the reconciled one", async () => {
    const order = await startSinkServer();
    const one = await createDispatchHarness(redisUrl, [testRoute("one", order.url, { concurrency: 1 })]);
    try {
      const dayAgo = Date.now() - dayMs;
      const reconciled = userState("auth0|reconciled", dayAgo, "reconciled");
      const late = userState("auth0|late", dayAgo, "late");
      const live = userState("auth0|live", Date.now(), "live");
      // Stored in the reverse of the order they must go, before any worker runs.
      await one.store.store(reconciled, { origin: "reconcile" });
      await one.store.store(late, { origin: "webhook" });
      await one.store.store(live, { origin: "webhook" });
      one.startDispatcher();
      await order.untilReceived(3);
      expect(order.requests.map((request) => request.headers["webhook-id"])).toEqual([live.id, late.id, reconciled.id]);
    } finally {
      await one.close();
      await order.close();
    }
  });
});
