import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { describeEvent } from "../../src/admin/describe-event.js";
import { replayDeadLetters } from "../../src/admin/replay-dead-letters.js";
import { dispatchEntityWaits, dispatchTotal } from "../../src/metrics/registry.js";
import { createEntityVersions } from "../../src/queue/entity-versions.js";
import { jobIdFor } from "../../src/queue/job-id.js";
import { createRedis, untilReady } from "../../src/redis/redis-connection.js";
import { createDispatchHarness, testRoute, type DispatchHarness } from "../helpers/dispatch-harness.js";
import { capturedLogger } from "../helpers/captured-logger.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";

const at = (second: number) => new Date(Date.parse("2026-01-01T00:00:00Z") + second * 1000).toISOString();
const stateOf = (user: string, second: number) => userEvent({ time: at(second), data: { object: { user_id: `auth0|${user}`, updated_at: at(second) } } });

/**
 * README "Route delivery controls": the dropStale guard applies to forced reconciles and
 * replayed dead letters too. An older state reaching the route by any path after a newer
 * one was delivered is skipped as stale, never POSTed.
 */
describe("dropStale: reconciles, forced reconciles and replayed dead letters", () => {
  const redisUrl = inject("redisUrl");
  const redis = createRedis(redisUrl, "worker");
  let sink: SinkServer;
  let harness: DispatchHarness;
  /** The POSTs the route received for one event id, whatever they were answered. */
  const postsOf = (eventId: string) => sink.requests.filter((request) => request.headers["webhook-id"] === eventId);
  const delivered = (eventId: string) => sink.until((requests) => requests.some((request) => request.headers["webhook-id"] === eventId && request.status === 200));
  const logs = capturedLogger("info");
  /** `streamkeeper_dispatch_total{route="fresh",outcome="stale"}` in this process. */
  const staleCount = async () => (await dispatchTotal.get()).values.find((value) => value.labels.route === "fresh" && value.labels.outcome === "stale")?.value ?? 0;
  /** README: a skipped event is logged at info, naming the event. */
  const staleLogged = (eventId: string, user: string) =>
    logs.lines.some((line) => line.level === 30 && line.eventId === eventId && line.entity === `user:auth0|${user}` && String(line.msg).includes("skipped as stale"));
  const routeState = async (eventId: string) => (await describeEvent(eventId, harness))?.routes.find((candidate) => candidate.route === "fresh")?.state;

  beforeAll(async () => {
    await untilReady(redis);
    sink = await startSinkServer();
    // One attempt per event: a failed delivery is a dead letter at once.
    harness = await createDispatchHarness(redisUrl, [testRoute("fresh", sink.url, { dropStale: true, maxAttemptsPerEvent: 1 })]);
    harness.startDispatcher({ entityVersions: createEntityVersions(redis, harness.prefix, 600), logger: logs.logger });
  });
  afterAll(async () => {
    await harness?.close();
    await sink?.close();
    redis.disconnect();
  });

  it("when a forced reconcile brings an older state after a newer one was delivered, then it is skipped as stale and never POSTed", async () => {
    const [older, newer] = [stateOf("forced", 10), stateOf("forced", 20)];
    await harness.store.store(older, { origin: "webhook" });
    await delivered(older.id);
    await harness.store.store(newer, { origin: "webhook" });
    await delivered(newer.id);

    const staleBefore = await staleCount();
    // The route already has the older id: only force sends it again.
    await expect(harness.store.store(older, { origin: "reconcile", force: true })).resolves.toMatchObject({ status: "stored", routes: ["fresh"] });
    // A forced store has its own job id (GET /admin/events looks up the live one): read its result.
    const forcedResult = async () => {
      const jobs = await harness.queues.forRoute("fresh").getJobs(["completed", "failed"]);
      return jobs.find((job) => job?.data.force && job.data.event.id === older.id)?.returnvalue?.status;
    };
    await expect.poll(forcedResult).toBe("stale");
    expect(postsOf(older.id)).toHaveLength(1); // the first, live delivery only
    expect(await staleCount()).toBe(staleBefore + 1);
    expect(staleLogged(older.id, "forced")).toBe(true);
  });

  it("when a reconcile (not forced) brings an older state the route never had, then it is skipped as stale and never POSTed", async () => {
    const [older, newer] = [stateOf("reconciled", 10), stateOf("reconciled", 20)];
    await harness.store.store(newer, { origin: "webhook" });
    await delivered(newer.id);

    await expect(harness.store.store(older, { origin: "reconcile" })).resolves.toMatchObject({ status: "stored", routes: ["fresh"] });
    await expect.poll(() => routeState(older.id)).toBe("stale");
    expect(postsOf(older.id)).toHaveLength(0);
    expect(staleLogged(older.id, "reconciled")).toBe(true);
    // Stale is an outcome, never a dead letter.
    expect(await harness.queues.forRoute("fresh").getJobState(jobIdFor(older.id))).toBe("completed");
  });

  it("when a dead letter of an older, reconciled state is replayed after a newer state was delivered, then the replay is skipped as stale and not POSTed again", async () => {
    const [older, newer] = [stateOf("replayed", 10), stateOf("replayed", 20)];
    const answer = sink.answer;
    sink.answer = (request) => (request.headers["webhook-id"] === older.id ? { status: 500 } : answer(request));
    try {
      await harness.store.store(older, { origin: "reconcile" });
      const queue = harness.queues.forRoute("fresh");
      await expect.poll(() => queue.getJobState(jobIdFor(older.id))).toBe("failed");
      expect(postsOf(older.id)).toHaveLength(1);
    } finally {
      sink.answer = answer;
    }
    await harness.store.store(newer, { origin: "webhook" });
    await delivered(newer.id);

    await expect(replayDeadLetters(harness.queues, { ids: [older.id] })).resolves.toEqual({ replayed: 1, unknown: [] });
    await expect.poll(() => routeState(older.id)).toBe("stale");
    expect(postsOf(older.id)).toHaveLength(1); // the failed first attempt only
  });

  it("when a newer state got a definite non-2xx answer (300: a dead letter), then the route does not have it: an older state is still delivered", async () => {
    const [older, newer] = [stateOf("refused", 10), stateOf("refused", 20)];
    const answer = sink.answer;
    sink.answer = (request) => (request.headers["webhook-id"] === newer.id ? { status: 300 } : answer(request));
    try {
      await harness.store.store(newer, { origin: "webhook" });
      await expect.poll(() => harness.queues.forRoute("fresh").getJobState(jobIdFor(newer.id))).toBe("failed");
    } finally {
      sink.answer = answer;
    }
    await harness.store.store(older, { origin: "webhook" });
    await delivered(older.id);
    await expect.poll(() => routeState(older.id)).toBe("delivered");
  });

  it("when a newer state's POST got no answer in time, then the route may have it: an older state that follows is stale", async () => {
    const [older, newer] = [stateOf("unanswered", 10), stateOf("unanswered", 20)];
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const answer = sink.answer;
    // Held past the route's timeoutMs: the worker gives up on an answer, the downstream may still have taken it.
    sink.answer = async (request) => (request.headers["webhook-id"] === newer.id ? (await held, {}) : answer(request));
    try {
      await harness.store.store(newer, { origin: "webhook" });
      await expect.poll(() => harness.queues.forRoute("fresh").getJobState(jobIdFor(newer.id))).toBe("failed");
    } finally {
      release();
      sink.answer = answer;
    }
    await harness.store.store(older, { origin: "webhook" });
    await expect.poll(() => routeState(older.id)).toBe("stale");
    expect(postsOf(older.id)).toHaveLength(0);
  });

  it("when a state arrives while another of its entity is held at the downstream, then it waits (counted in dispatch_entity_waits_total, no attempt spent) and is sent only after that one was answered", async () => {
    const [first, second] = [stateOf("waits", 10), stateOf("waits", 20)];
    const waits = async () => (await dispatchEntityWaits.get()).values.find((value) => value.labels.route === "fresh")?.value ?? 0;
    const waitsBefore = await waits();
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const answer = sink.answer;
    sink.answer = async (request) => (request.headers["webhook-id"] === first.id ? (await held, {}) : answer(request));
    try {
      await harness.store.store(first, { origin: "webhook" });
      await sink.until((requests) => requests.some((request) => request.headers["webhook-id"] === first.id));
      await harness.store.store(second, { origin: "webhook" });
      await expect.poll(waits).toBeGreaterThan(waitsBefore);
      expect(postsOf(second.id)).toHaveLength(0);
    } finally {
      release();
      sink.answer = answer;
    }
    await delivered(second.id);
    const [firstPost] = postsOf(first.id);
    expect(postsOf(second.id)[0]!.receivedAt).toBeGreaterThanOrEqual(firstPost!.answeredAt!);
    const queue = harness.queues.forRoute("fresh");
    await expect.poll(() => queue.getJobState(jobIdFor(second.id))).toBe("completed");
    expect((await queue.getJob(jobIdFor(second.id)))!.attemptsMade).toBe(1); // the delivery; the waits spent none
  });

  it("when a replayed dead letter is still the newest state, then it is POSTed again and delivered (the guard does not block it)", async () => {
    const only = stateOf("replay-newest", 10);
    const answer = sink.answer;
    sink.answer = (request) => (request.headers["webhook-id"] === only.id ? { status: 500 } : answer(request));
    const queue = harness.queues.forRoute("fresh");
    try {
      await harness.store.store(only, { origin: "webhook" });
      await expect.poll(() => queue.getJobState(jobIdFor(only.id))).toBe("failed");
    } finally {
      sink.answer = answer;
    }
    await expect(replayDeadLetters(harness.queues, { ids: [only.id] })).resolves.toEqual({ replayed: 1, unknown: [] });
    await delivered(only.id);
    expect(postsOf(only.id).map((request) => request.status)).toEqual([500, 200]);
    await expect.poll(() => routeState(only.id)).toBe("delivered");
  });
});
