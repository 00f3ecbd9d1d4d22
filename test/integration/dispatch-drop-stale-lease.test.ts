import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { dispatchEntityLeaseExpired, dispatchEntityWaits } from "../../src/metrics/registry.js";
import { createEntityVersions } from "../../src/queue/entity-versions.js";
import { createEventLedger } from "../../src/queue/event-ledger.js";
import { jobIdFor } from "../../src/queue/job-id.js";
import { createRedis, untilReady } from "../../src/redis/redis-connection.js";
import { createDispatchHarness, testRoute, type DispatchHarness } from "../helpers/dispatch-harness.js";
import { capturedLogger } from "../helpers/captured-logger.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";

const at = (second: number) => new Date(Date.parse("2026-01-01T00:00:00Z") + second * 1000).toISOString();
const stateOf = (user: string, second: number) => userEvent({ time: at(second), data: { object: { user_id: `auth0|${user}`, updated_at: at(second) } } });
/** A promise the sink holds a request on, and the function that lets it go. */
const gate = () => {
  let release: () => void = () => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  return { held, release };
};
/** Slack for Redis's and Node's clocks reading the same moment a millisecond apart. */
const clockSlackMs = 5;

/**
 * README "Route delivery controls": dropStale sends one state of an entity at a time. A
 * state whose entity is held waits (no attempt spent) about as long as the holder has been
 * at it, at least a typical delivery of the route, never past the lease; the lease lasts
 * 2 × timeoutMs + 1 s, so a crashed holder frees its entity; a delivery that outlives it is
 * counted and said. Waits are checked against bounds computed from this run's own measured
 * times (docs/testing.md): load can only widen them.
 */
describe("dropStale: waiting behind a busy entity, and the entity lease", () => {
  const redisUrl = inject("redisUrl");
  const redis = createRedis(redisUrl, "worker");
  const timeoutMs = 10_000;
  const leaseMs = 2 * timeoutMs + 1000;
  let sink: SinkServer;
  let harness: DispatchHarness;
  const logs = capturedLogger("debug");
  const waitLines = (entity: string) => logs.lines.filter((line) => line.level === 20 && line.entity === entity && String(line.msg).includes("waiting for it"));
  const counter = async (metric: typeof dispatchEntityWaits) => (await metric.get()).values.find((value) => value.labels.route === "leases")?.value ?? 0;
  const postOf = (eventId: string) => sink.requests.find((request) => request.headers["webhook-id"] === eventId);
  const delivered = (eventId: string) => sink.until((requests) => requests.some((request) => request.headers["webhook-id"] === eventId && request.status === 200));
  const leaseKeyOf = async (entity: string) => {
    const keys = await redis.keys(`{${harness.prefix}:versions:leases:*}:lease:${entity}`);
    expect(keys).toHaveLength(1);
    return keys[0]!;
  };

  beforeAll(async () => {
    await untilReady(redis);
    sink = await startSinkServer();
    harness = await createDispatchHarness(redisUrl, [testRoute("leases", sink.url, { dropStale: true, timeoutMs, maxAttemptsPerEvent: 1 })]);
    harness.startDispatcher({ entityVersions: createEntityVersions(redis, harness.prefix, 600), logger: logs.logger });
  });
  afterAll(async () => {
    await harness?.close();
    await sink?.close();
    redis.disconnect();
  });

  it("when the route's deliveries take a while and a state arrives while its entity is held, then each wait lasts half to one and a half times the longer of a typical delivery and the holder's time so far, and the next look comes no sooner", async () => {
    // Deliveries of other entities that take at least 150 ms each: the route's typical delivery.
    const warmDelayMs = 150;
    const warm = Array.from({ length: 6 }, (_, index) => stateOf(`warm-${index}`, 10));
    const answer = sink.answer;
    sink.answer = (request) => (warm.some((event) => event.id === request.headers["webhook-id"]) ? { delayMs: warmDelayMs } : answer(request));
    for (const event of warm) {
      await harness.store.store(event, { origin: "webhook" });
      await delivered(event.id);
    }
    sink.answer = answer;
    // The guard smooths delivery times 0.8 old, 0.2 new, from 20 ms: bounded below by the
    // sink's hold of each request, above by BullMQ's processing span of its job.
    const queue = harness.queues.forRoute("leases");
    await expect.poll(async () => (await Promise.all(warm.map((event) => queue.getJobState(jobIdFor(event.id))))).every((state) => state === "completed")).toBe(true);
    const spans = await Promise.all(warm.map(async (event) => ((job) => job!.finishedOn! - job!.processedOn!)(await queue.getJob(jobIdFor(event.id)))));
    let [typicalLow, typicalHigh] = [20, 20];
    warm.forEach((event, index) => {
      const post = postOf(event.id)!;
      typicalLow = 0.8 * typicalLow + 0.2 * (post.answeredAt! - post.receivedAt);
      typicalHigh = 0.8 * typicalHigh + 0.2 * spans[index]!;
    });
    expect(typicalLow).toBeGreaterThan(100);

    const [first, second] = [stateOf("held", 10), stateOf("held", 20)];
    const entity = "user:auth0|held";
    const { held, release } = gate();
    sink.answer = async (request) => (request.headers["webhook-id"] === first.id ? (await held, {}) : answer(request));
    const firstStoredAt = Date.now();
    try {
      await harness.store.store(first, { origin: "webhook" });
      await sink.until((requests) => requests.some((request) => request.headers["webhook-id"] === first.id));
      const secondStoredAt = Date.now();
      await harness.store.store(second, { origin: "webhook" });
      await expect.poll(() => waitLines(entity).length).toBeGreaterThanOrEqual(3);
      expect(postOf(second.id)).toBeUndefined();

      // The lease: 2 × timeoutMs + 1 s from when it was taken, counting down.
      const leftMs = await redis.pttl(await leaseKeyOf(entity));
      expect(leftMs).toBeLessThanOrEqual(leaseMs);
      expect(leftMs).toBeGreaterThanOrEqual(leaseMs - (Date.now() - firstStoredAt) - clockSlackMs);

      const leaseTakenBy = postOf(first.id)!.receivedAt;
      const lines = waitLines(entity);
      lines.forEach((line, index) => {
        const loggedAt = line.time as number;
        const waitMs = line.waitMs as number;
        // It looked again no sooner than the previous wait ended.
        const lookedAfter = index === 0 ? secondStoredAt : (lines[index - 1]!.time as number) + (lines[index - 1]!.waitMs as number);
        if (index > 0) expect(loggedAt).toBeGreaterThanOrEqual(lookedAfter - clockSlackMs);
        const heldHigh = loggedAt - firstStoredAt + clockSlackMs;
        const heldLow = Math.max(0, lookedAfter - leaseTakenBy - clockSlackMs);
        const baseLow = Math.min(leaseMs - heldHigh, Math.max(typicalLow, heldLow, 5));
        const baseHigh = Math.min(leaseMs - heldLow, Math.max(typicalHigh, heldHigh, 5));
        expect(waitMs, `wait ${index}: ${JSON.stringify({ waitMs, baseLow, baseHigh })}`).toBeGreaterThanOrEqual(Math.floor(0.5 * baseLow) - 1);
        expect(waitMs, `wait ${index}: ${JSON.stringify({ waitMs, baseLow, baseHigh })}`).toBeLessThanOrEqual(Math.ceil(1.5 * baseHigh) + 1);
      });
    } finally {
      release();
      sink.answer = answer;
    }
    await delivered(second.id);
    expect(postOf(second.id)!.receivedAt).toBeGreaterThanOrEqual(postOf(first.id)!.answeredAt!);
  });

  it("when a delivery outlives its entity lease, then it is counted in dispatch_entity_lease_expired_total and a warning names the entity and the lease; deliveries within their lease count none", async () => {
    // Every delivery so far gave its lease back in time.
    expect(await counter(dispatchEntityLeaseExpired)).toBe(0);
    const state = stateOf("outlived", 10);
    const entity = "user:auth0|outlived";
    const { held, release } = gate();
    const answer = sink.answer;
    sink.answer = async (request) => (request.headers["webhook-id"] === state.id ? (await held, {}) : answer(request));
    try {
      await harness.store.store(state, { origin: "webhook" });
      await sink.until((requests) => requests.some((request) => request.headers["webhook-id"] === state.id));
      // The lease runs out while the POST is still open (as under a stalled event loop).
      expect(await redis.del(await leaseKeyOf(entity))).toBe(1);
    } finally {
      release();
      sink.answer = answer;
    }
    await delivered(state.id);
    await expect.poll(() => counter(dispatchEntityLeaseExpired)).toBe(1);
    const warning = logs.lines.find((line) => line.level === 40 && line.entity === entity);
    expect(warning).toMatchObject({ eventId: state.id, leaseMs, route: "leases" });
    expect(String(warning!.msg)).toContain("outlived its entity lease");
  });
});

/**
 * When Redis fails between an attempt and its record, the delivery stands and the failure
 * is said: a stale skip whose mark is lost, a delivered state whose version is not kept.
 */
describe("dropStale: Redis failing around an attempt", () => {
  const redisUrl = inject("redisUrl");
  const versionsRedis = createRedis(redisUrl, "worker");
  const ledgerRedis = createRedis(redisUrl, "worker");
  versionsRedis.on("error", () => {});
  ledgerRedis.on("error", () => {});
  let sink: SinkServer;
  let harness: DispatchHarness;
  const logs = capturedLogger("info");
  const warning = (eventId: string, text: string) => logs.lines.find((line) => line.level === 40 && line.eventId === eventId && String(line.msg).includes(text));
  const delivered = (eventId: string) => sink.until((requests) => requests.some((request) => request.headers["webhook-id"] === eventId && request.status === 200));

  beforeAll(async () => {
    await Promise.all([untilReady(versionsRedis), untilReady(ledgerRedis)]);
    sink = await startSinkServer();
    harness = await createDispatchHarness(redisUrl, [testRoute("cut", sink.url, { dropStale: true, maxAttemptsPerEvent: 1 })]);
    // The guard's versions and the dispatcher's ledger on connections of their own, cut below.
    harness.startDispatcher({
      entityVersions: createEntityVersions(versionsRedis, harness.prefix, 600),
      ledger: createEventLedger(ledgerRedis, harness.prefix, 600),
      logger: logs.logger,
    });
  });
  afterAll(async () => {
    await harness?.close();
    await sink?.close();
    versionsRedis.disconnect();
    ledgerRedis.disconnect();
  });

  it("when recording a stale skip fails, then the event is still skipped (never POSTed) and a warning says its record was lost", async () => {
    const [older, newer] = [stateOf("mark-lost", 10), stateOf("mark-lost", 20)];
    await harness.store.store(newer, { origin: "webhook" });
    await delivered(newer.id);
    ledgerRedis.disconnect();
    await harness.store.store(older, { origin: "webhook" });
    await expect.poll(() => warning(older.id, "skipped as stale, but recording it failed")).toMatchObject({ route: "cut", err: expect.anything() });
    await expect.poll(async () => (await harness.queues.forRoute("cut").getJob(jobIdFor(older.id)))?.returnvalue?.status).toBe("stale");
    expect(sink.requests.filter((request) => request.headers["webhook-id"] === older.id)).toHaveLength(0);
  });

  it("when recording a delivered state fails, then the delivery stands and a warning names the entity whose next state waits for the lease", async () => {
    const state = stateOf("version-lost", 10);
    const { held, release } = gate();
    const answer = sink.answer;
    sink.answer = async (request) => (request.headers["webhook-id"] === state.id ? (await held, {}) : answer(request));
    try {
      await harness.store.store(state, { origin: "webhook" });
      await sink.until((requests) => requests.some((request) => request.headers["webhook-id"] === state.id));
      versionsRedis.disconnect();
    } finally {
      release();
      sink.answer = answer;
    }
    await delivered(state.id);
    await expect.poll(() => warning(state.id, "recording the entity's delivered state failed")).toMatchObject({ entity: "user:auth0|version-lost", err: expect.anything() });
    await expect.poll(() => harness.queues.forRoute("cut").getJobState(jobIdFor(state.id))).toBe("completed");
  });
});
