import { afterEach, beforeAll, afterAll, describe, expect, inject, it } from "vitest";
import { archiveOutboxKey, createArchiveOutbox } from "../../src/archive/archive-outbox.js";
import { parseOutboxEntry, type AttemptRecord } from "../../src/archive/archive-record.js";
import { createFreshnessRecorder } from "../../src/freshness/create-freshness-recorder.js";
import { freshnessMinuteKey } from "../../src/freshness/freshness-keys.js";
import { replayDeliveries } from "../../src/metrics/archive-metrics.js";
import { deliveryLag } from "../../src/metrics/delivery-lag.js";
import { dispatchDuration, dispatchTotal } from "../../src/metrics/registry.js";
import { createEntityVersions } from "../../src/queue/entity-versions.js";
import { createEventLedger } from "../../src/queue/event-ledger.js";
import { replayPriority } from "../../src/queue/delivery-job.js";
import { jobIdFor } from "../../src/queue/job-id.js";
import { closeRedis, createRedis, untilReady, type RedisClient } from "../../src/redis/redis-connection.js";
import { capturedLogger } from "../helpers/captured-logger.js";
import { createDispatchHarness, testRoute, type DispatchHarness } from "../helpers/dispatch-harness.js";
import { userEvent } from "../helpers/fixtures.js";
import { createSinkPool } from "../helpers/sink-server.js";

const redisUrl = inject("redisUrl");

/**
 * README "The archive": with the archive on, every delivery attempt of every route is
 * recorded with what became of it (retry, delivered, dead letter, stale), its answer's
 * status or the error, and the replay it belongs to. Read here from the archive's outbox
 * in Redis (archive-outbox.ts), the records the archive writer puts into Postgres as they
 * are (archive-writer.test.ts proves that part).
 */
describe("dispatch: each attempt recorded in the archive", () => {
  let redis: RedisClient;
  let harness: DispatchHarness | undefined;
  const sinks = createSinkPool();
  const sink = sinks.start;
  /** The attempt records of an event in the outbox, in the order they were added. */
  const attemptsOf = async (eventId: string): Promise<AttemptRecord[]> => {
    const entries = await redis.xrange(archiveOutboxKey(harness!.prefix), "-", "+");
    return entries
      .flatMap(([, fields]) => parseOutboxEntry(fields))
      .filter((record): record is AttemptRecord => "kind" in record && record.kind === "attempt" && record.eventId === eventId);
  };
  /** A dispatcher whose attempts go to the archive's outbox, as the service wires it with ARCHIVE=on (service/create-delivery.ts). */
  const archiveTo = (connection: RedisClient) => {
    const outbox = createArchiveOutbox(connection, harness!.prefix);
    return (record: AttemptRecord) => outbox([record]);
  };
  const counted = async (route: string, outcome: string) =>
    (await replayDeliveries.get()).values.find((value) => value.labels.route === route && value.labels.outcome === outcome)?.value ?? 0;
  /** A histogram's observation count for one route (and origin, where it has one). */
  const observed = async (metric: typeof dispatchDuration | typeof deliveryLag, labels: Record<string, string>) =>
    (await metric.get()).values.find((value) => value.metricName?.endsWith("_count") && Object.entries(labels).every(([name, wanted]) => (value.labels as Record<string, unknown>)[name] === wanted))?.value ?? 0;

  beforeAll(async () => {
    redis = createRedis(redisUrl, "worker", "test-archive-attempts");
    await untilReady(redis);
  });
  afterAll(async () => {
    await closeRedis(redis);
  });
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
    await sinks.closeAll();
  });

  it("when a delivery fails twice and then goes through, then three attempts are archived in order: two retries with the status and reason, then the delivery with its status and no error, each under its own key", async () => {
    const downstream = await sink((request) => (request.index < 2 ? { status: 503, body: "busy" } : { status: 201 }));
    harness = await createDispatchHarness(redisUrl, [testRoute("kept", downstream.url, { maxAttemptsPerEvent: 5 })]);
    const freshness = createFreshnessRecorder({ redis, queuePrefix: harness.prefix, logger: capturedLogger().logger });
    harness.startDispatcher({ archive: archiveTo(redis), freshness });
    const event = userEvent();
    const before = Date.now();
    await harness.store.store(event, { origin: "webhook" });
    await expect.poll(async () => (await attemptsOf(event.id)).length).toBe(3);
    const receivedAt = (await harness.queues.forRoute("kept").getJob(jobIdFor(event.id)))!.data.receivedAt;

    const attempts = await attemptsOf(event.id);
    expect(attempts.map(({ outcome, status, error }) => ({ outcome, status, error }))).toEqual([
      { outcome: "retry", status: 503, error: "downstream answered 503: busy" },
      { outcome: "retry", status: 503, error: "downstream answered 503: busy" },
      { outcome: "delivered", status: 201, error: undefined },
    ]);
    for (const attempt of attempts) {
      expect(attempt).toMatchObject({ kind: "attempt", eventId: event.id, route: "kept", receivedAt });
      expect(attempt).not.toHaveProperty("replayId");
      expect(attempt.at).toBeGreaterThanOrEqual(before);
      expect(attempt.at).toBeLessThanOrEqual(Date.now());
      expect(attempt.key.startsWith(`${jobIdFor(event.id)}:`)).toBe(true);
    }
    expect(attempts[2]).not.toHaveProperty("error");
    // One record per attempt: the archive keeps one row per key.
    expect(new Set(attempts.map((attempt) => attempt.key)).size).toBe(3);
    // Each attempt timed, the delivery counted and its lag observed; no replay counted for an event that came by webhook.
    expect(await observed(dispatchDuration, { route: "kept" })).toBe(3);
    expect((await dispatchTotal.get()).values.find((value) => value.labels.route === "kept" && value.labels.outcome === "delivered")?.value).toBe(1);
    expect(await observed(deliveryLag, { route: "kept", origin: "webhook", lane: "live" })).toBe(1);
    expect((await replayDeliveries.get()).values.filter((value) => value.labels.route === "kept")).toEqual([]);
    await freshness.close();
  });

  it("when a route refuses an event for good, then its one attempt is archived as a dead letter with the status and the reason; when nothing answers, the attempt has the error and no status", async () => {
    const refusing = await sink(() => ({ status: 422, body: "no" }));
    const closed = await sink();
    const unreachable = closed.url;
    await sinks.close(closed);
    harness = await createDispatchHarness(redisUrl, [
      testRoute("refusing", refusing.url, { match: ["user.updated"] }),
      testRoute("unreachable", unreachable, { match: ["user.created"], maxAttemptsPerEvent: 2 }),
    ]);
    harness.startDispatcher({ archive: archiveTo(redis) });
    const refused = userEvent();
    const lost = userEvent({ type: "user.created" });
    await harness.store.store(refused, { origin: "reconcile" });
    await harness.store.store(lost, { origin: "webhook" });

    await expect.poll(async () => (await attemptsOf(refused.id)).length).toBe(1);
    expect((await attemptsOf(refused.id))[0]).toMatchObject({ route: "refusing", outcome: "dead_letter", status: 422, error: "downstream answered 422: no" });

    await expect.poll(async () => (await attemptsOf(lost.id)).map((attempt) => attempt.outcome)).toEqual(["retry", "dead_letter"]);
    for (const attempt of await attemptsOf(lost.id)) {
      expect(attempt).not.toHaveProperty("status");
      expect(attempt.error).toMatch(/ECONNREFUSED|connect|refused/i);
    }
  });

  it("when a replay's job is delivered, then it goes out with origin replay, its attempt is archived under the replay and counted as a replay delivery", async () => {
    const downstream = await sink();
    harness = await createDispatchHarness(redisUrl, [testRoute("replayed", downstream.url)]);
    harness.startDispatcher({ archive: archiveTo(redis) });
    const deliveredBefore = await counted("replayed", "delivered");
    const event = userEvent();
    // As replay-runner.ts queues it: forced, under the replay's id.
    await harness.queues.forRoute("replayed").add(event.type, { event, origin: "webhook", receivedAt: Date.now() - 60_000, force: true, replayId: "rpl_attempts" }, { jobId: `${jobIdFor(event.id)}-rpl_attempts`, priority: replayPriority });

    const [request] = await downstream.untilReceived(1);
    expect(request!.headers["x-streamkeeper-origin"]).toBe("replay");
    await expect.poll(async () => (await attemptsOf(event.id)).length).toBe(1);
    expect((await attemptsOf(event.id))[0]).toMatchObject({ outcome: "delivered", status: 200, replayId: "rpl_attempts", route: "replayed" });
    expect(await counted("replayed", "delivered")).toBe(deliveredBefore + 1);
  });

  it("when an older state of an entity follows a delivered newer one on a dropStale route, then the older one's attempt is archived as stale, without a status", async () => {
    const downstream = await sink();
    harness = await createDispatchHarness(redisUrl, [testRoute("fresh", downstream.url, { dropStale: true })]);
    const freshness = createFreshnessRecorder({ redis, queuePrefix: harness.prefix, logger: capturedLogger().logger, flushEveryMs: 50 });
    harness.startDispatcher({ archive: archiveTo(redis), entityVersions: createEntityVersions(redis, harness.prefix, 600), freshness });
    const at = (second: number) => new Date(Date.parse("2026-01-01T00:00:00Z") + second * 1000).toISOString();
    const newer = userEvent({ time: at(20), data: { object: { user_id: "auth0|archived-stale", updated_at: at(20) } } });
    const older = userEvent({ time: at(10), data: { object: { user_id: "auth0|archived-stale", updated_at: at(10) } } });
    await harness.store.store(newer, { origin: "webhook" });
    await expect.poll(async () => (await attemptsOf(newer.id)).map((attempt) => attempt.outcome)).toEqual(["delivered"]);
    await harness.store.store(older, { origin: "webhook" });
    await expect.poll(async () => (await attemptsOf(older.id)).length).toBe(1);
    const [stale] = await attemptsOf(older.id);
    expect(stale).toMatchObject({ outcome: "stale", route: "fresh" });
    expect(stale).not.toHaveProperty("status");
    expect(stale).not.toHaveProperty("error");
    expect(downstream.requests.map((request) => request.headers["webhook-id"])).toEqual([newer.id]);
    // The operator view's freshness counts it as skipped stale (and the newer one as delivered).
    await freshness.close();
    const minute = Math.floor(stale!.at / 60_000);
    expect(await redis.hget(freshnessMinuteKey(harness.prefix, minute), "fresh|s")).toBe("1");
  });

  it("when the archive's outbox cannot take an attempt, then the delivery still goes through and a warning says the archive lacks that attempt", async () => {
    const downstream = await sink();
    const logs = capturedLogger("info");
    harness = await createDispatchHarness(redisUrl, [testRoute("lossy", downstream.url)]);
    // An outbox on a connection that is gone: every add fails.
    const gone = createRedis(redisUrl, "client", "test-archive-gone");
    gone.on("error", () => {});
    await untilReady(gone);
    gone.disconnect();
    harness.startDispatcher({ archive: archiveTo(gone), logger: logs.logger });
    const event = userEvent();
    await harness.store.store(event, { origin: "webhook" });
    await downstream.untilReceived(1);
    await expect.poll(() => harness!.queues.forRoute("lossy").getJobState(jobIdFor(event.id))).toBe("completed");
    await expect.poll(() => logs.lines.find((line) => line.eventId === event.id && line.level === 40)).toMatchObject({
      route: "lossy",
      msg: "could not add this attempt to the archive's outbox; the archive lacks it",
    });
  });

  it("when the delivered mark cannot be written after a 2xx, then the delivery stands and a warning names the event and says a re-run would send it again", async () => {
    const downstream = await sink();
    const logs = capturedLogger("info");
    harness = await createDispatchHarness(redisUrl, [testRoute("unmarked", downstream.url)]);
    // The dispatcher's ledger on a connection of its own, gone before the delivery.
    const gone = createRedis(redisUrl, "client", "test-ledger-gone");
    gone.on("error", () => {});
    await untilReady(gone);
    gone.disconnect();
    harness.startDispatcher({ ledger: createEventLedger(gone, harness.prefix, 600), logger: logs.logger });
    const event = userEvent();
    await harness.store.store(event, { origin: "webhook" });
    await expect.poll(() => harness!.queues.forRoute("unmarked").getJobState(jobIdFor(event.id))).toBe("completed");
    await expect.poll(() => logs.lines.find((line) => line.eventId === event.id && line.level === 40)).toMatchObject({
      route: "unmarked",
      msg: "delivered, but recording the delivery failed; a re-run of this job would send it again",
    });
    // The completion with its mark in one call failed first, and is said too.
    expect(logs.lines.find((line) => String(line.msg).startsWith("could not complete a delivered job with its mark in one call"))).toMatchObject({ route: "unmarked", level: 40 });
    expect(downstream.requests).toHaveLength(1);
    expect(await harness.ledger.deliveredAt(event.id, "unmarked")).toBeUndefined();
  });
});
