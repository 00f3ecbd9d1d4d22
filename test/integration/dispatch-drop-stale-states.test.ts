import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { describeEvent } from "../../src/admin/describe-event.js";
import type { CloudEvent } from "../../src/events/cloud-event.js";
import { createEntityVersions } from "../../src/queue/entity-versions.js";
import { jobIdFor } from "../../src/queue/job-id.js";
import { createRedis, untilReady } from "../../src/redis/redis-connection.js";
import { createDispatchHarness, testRoute, type DispatchHarness } from "../helpers/dispatch-harness.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { until as untilAnswer } from "../helpers/until.js";

const at = (second: number) => new Date(Date.parse("2026-01-01T00:00:00Z") + second * 1000).toISOString();
const userAt = (second: number, type = "user.updated") => userEvent({ type, time: at(second), data: { object: { user_id: "auth0|states", updated_at: at(second) } } });

/**
 * What a skipped event looks like from outside, in one process: `stale` in GET
 * /admin/events while its job is kept and after it is gone; events about no entity and
 * plain routes untouched by the guard.
 */
describe("dropStale: states and untouched paths", () => {
  const redisUrl = inject("redisUrl");
  const redis = createRedis(redisUrl, "worker");
  let sink: SinkServer;
  let harness: DispatchHarness;
  const delivered = (eventId: string) => sink.until((requests) => requests.some((request) => request.headers["webhook-id"] === eventId && request.status === 200));
  const stateOf = async (eventId: string, route: string) => (await describeEvent(eventId, harness))?.routes.find((candidate) => candidate.route === route)?.state;
  const until = (condition: () => Promise<boolean>) => untilAnswer("the condition", condition, { everyMs: 25 });

  beforeAll(async () => {
    await untilReady(redis);
    sink = await startSinkServer();
    harness = await createDispatchHarness(redisUrl, [testRoute("fresh", sink.url, { dropStale: true, match: ["user.*", "organization.*"] }), testRoute("plain", sink.url, { match: ["user.*"] })]);
    harness.startDispatcher({ entityVersions: createEntityVersions(redis, harness.prefix, 600) });
  });
  afterAll(async () => {
    await harness?.close();
    await sink?.close();
    redis.disconnect();
  });

  it("when an older state follows a delivered newer one, then it is stale in GET /admin/events, also once its job is removed, and the plain route still gets it", async () => {
    const newer = userAt(20);
    await harness.store.store(newer, { origin: "webhook" });
    await delivered(newer.id);
    const older = userAt(10);
    await harness.store.store(older, { origin: "webhook" });
    await until(async () => (await stateOf(older.id, "fresh")) === "stale");
    expect(await stateOf(older.id, "plain")).not.toBe("stale");
    await until(async () => (await stateOf(older.id, "plain")) === "delivered");

    await (await harness.queues.forRoute("fresh").getJob(jobIdFor(older.id)))!.remove();
    expect(await stateOf(older.id, "fresh")).toBe("stale");
    expect(await stateOf(newer.id, "fresh")).toBe("delivered");
    const freshCopies = sink.requests.filter((request) => request.headers["webhook-id"] === older.id);
    expect(freshCopies).toHaveLength(1); // the plain route's only
  });

  it("when events are about no entity (a membership), then a dropStale route delivers each, older or not, and keeps no version for them", async () => {
    const member = (second: number): CloudEvent =>
      userEvent({ type: "organization.member.added", time: at(second), data: { object: { organization: { id: "org_1" }, user: { user_id: `auth0|m${second}` } } } });
    const [late, early] = [member(50), member(5)];
    await harness.store.store(late, { origin: "webhook" });
    await delivered(late.id);
    await harness.store.store(early, { origin: "webhook" });
    await delivered(early.id);
    expect(await stateOf(early.id, "fresh")).toBe("delivered");
  });

  it("when a route has no dropStale, then its deliveries leave no version or lease in Redis", async () => {
    const keys = await redis.keys(`{${harness.prefix}*`);
    expect(keys.filter((key) => /:(versions|lease):plain:/.test(key))).toEqual([]);
    expect(keys.some((key) => key.includes(":versions:fresh:"))).toBe(true);
  });

  // A wait puts the job back without an attempt, yet BullMQ counts it in attemptsStarted
  // (every move to active does): the run after a wait must not be taken for a re-run.
  it("when a job waited behind its entity's lease, then its next run is still a first run: it reads no delivered mark (one planted for it is not looked at) and is sent", async () => {
    const waiter = (second: number) => userEvent({ time: at(second), data: { object: { user_id: "auth0|waits", updated_at: at(second) } } });
    const [first, second] = [waiter(10), waiter(20)];
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    // The first state is held at the downstream until the test lets it go: its entity's lease stays taken meanwhile.
    const answer = sink.answer;
    sink.answer = async (request) => (request.headers["webhook-id"] === first.id ? (await held, {}) : answer(request));
    try {
      await harness.store.store(first, { origin: "webhook" });
      await sink.until((requests) => requests.some((request) => request.headers["webhook-id"] === first.id));
      await harness.store.store(second, { origin: "webhook" });
      // A mark only a re-run reads: were the wait taken for a started attempt, the job would end as already delivered, unsent.
      await harness.ledger.markDelivered(second.id, "fresh", Date.now());
      const queue = harness.queues.forRoute("fresh");
      await until(async () => ((await queue.getJob(jobIdFor(second.id)))?.attemptsStarted ?? 0) >= 2);

      release();
      await until(async () => (await queue.getJob(jobIdFor(second.id)))?.returnvalue?.status !== undefined);
      const job = (await queue.getJob(jobIdFor(second.id)))!;
      // "delivered" is returned only after the route answered 2xx: it was sent.
      expect(job.returnvalue.status).toBe("delivered");
      expect(job.attemptsMade).toBe(1); // the one delivery; the waits spent none
    } finally {
      release();
      sink.answer = answer;
    }
  });

  it("when a delete's first attempt gets no answer (the route's timeout), then its retry is sent and delivered, not skipped as stale", async () => {
    // An organization's: the plain route takes user.* only, so every request for it is the fresh route's.
    const remove = userEvent({ type: "organization.deleted", time: at(30), data: { object: { id: "org_no_answer", updated_at: at(30) } } });
    const answer = sink.answer;
    let attempts = 0;
    // Past the route's timeoutMs (2 s): no answer, which records the delete as possibly received.
    sink.answer = (request) => (request.headers["webhook-id"] === remove.id && ++attempts === 1 ? { delayMs: 3000 } : answer(request));
    try {
      await harness.store.store(remove, { origin: "webhook" });
      await until(async () => (await stateOf(remove.id, "fresh")) === "delivered");
      expect(attempts).toBe(2);
      expect(sink.requests.filter((request) => request.headers["webhook-id"] === remove.id && request.status === 200)).toHaveLength(1);
    } finally {
      sink.answer = answer;
    }
  });

  it("when a dropStale route is given to a dispatcher without entity versions, then it says what to pass", () => {
    expect(() => harness.startDispatcher({ entityVersions: undefined })).toThrow(/route fresh has dropStale .* pass createEntityVersions/);
  });
});
