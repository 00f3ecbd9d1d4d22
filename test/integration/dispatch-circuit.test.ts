import { afterEach, describe, expect, inject, it } from "vitest";
import { archiveOutboxKey, createArchiveOutbox } from "../../src/archive/archive-outbox.js";
import { parseOutboxEntry, type AttemptRecord } from "../../src/archive/archive-record.js";
import { dispatchTotal } from "../../src/metrics/registry.js";
import { jobIdFor } from "../../src/queue/job-id.js";
import { closeRedis, createRedis, untilReady } from "../../src/redis/redis-connection.js";
import { capturedLogger } from "../helpers/captured-logger.js";
import { collectDeadLetters } from "../helpers/collect-dead-letters.js";
import { createDispatchHarness, testRoute, type DispatchHarness } from "../helpers/dispatch-harness.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";

const redisUrl = inject("redisUrl");
const circuit = { failures: 2, probeMinMs: 50, probeMaxMs: 200 };

/**
 * README "Routes", the circuit, seen from a delivery: a route that keeps failing stops
 * sending, its events wait in its queue without spending attempts (each failure still
 * counted and archived as a retry, the hold said at debug), and it resumes by itself; a
 * definite answer (a 4xx) is no outage: it closes the circuit. route-circuit.test.ts
 * states the circuit's own rules, downstream-outage.test.ts the same as a process.
 */
describe("dispatch: a route's circuit", () => {
  let harness: DispatchHarness | undefined;
  let downstream: SinkServer | undefined;
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
    await downstream?.close();
  });
  const counted = async (route: string, outcome: string) =>
    (await dispatchTotal.get()).values.find((value) => value.labels.route === route && value.labels.outcome === outcome)?.value ?? 0;

  it("when a route is down for longer than its events have attempts, then its circuit opens, the events wait without spending attempts, each failure is counted and archived as a retry, and all are delivered once it is back", async () => {
    let down = true;
    downstream = await startSinkServer(() => (down ? { status: 503, body: "down" } : { status: 200 }));
    const logs = capturedLogger("debug");
    const redis = createRedis(redisUrl, "worker", "test-circuit-outbox");
    await untilReady(redis);
    try {
      harness = await createDispatchHarness(redisUrl, [testRoute("flaky", downstream.url, { maxAttemptsPerEvent: 2, concurrency: 1 })]);
      const outbox = createArchiveOutbox(redis, harness.prefix);
      harness.startDispatcher({ circuit, logger: logs.logger, archive: (record) => outbox([record]) });
      const retriesBefore = await counted("flaky", "retry");
      const events = Array.from({ length: 4 }, () => userEvent());
      for (const event of events) await harness.store.store(event, { origin: "webhook" });

      // Open, and probed at least twice more: more failures than the 4 events × 2 attempts could take otherwise.
      await downstream.until((requests) => requests.length >= 10, 30_000);
      const held = logs.lines.filter((line) => line.msg === "delivery failed; the route's circuit is open, the event waits in the queue");
      expect(held.length).toBeGreaterThan(0);
      expect(held[0]).toMatchObject({ level: 20, route: "flaky", reason: "downstream answered 503: down" });
      down = false;

      await downstream.until((requests) => events.every((event) => requests.some((request) => request.headers["webhook-id"] === event.id && request.status === 200)), 30_000);
      for (const event of events) await expect.poll(() => harness!.queues.forRoute("flaky").getJobState(jobIdFor(event.id))).toBe("completed");
      expect(await collectDeadLetters(harness.queues)).toEqual([]);
      await expect.poll(() => logs.lines.some((line) => line.msg === "route circuit closed: the downstream answered; the route sends again")).toBe(true);

      // Every 503 is one failed attempt, counted and archived as a retry; never a dead letter.
      const failures = downstream.requests.filter((request) => request.status === 503).length;
      // While open, only probes went out (one at a time): every 503 after the two that opened it was a probe.
      const opened = logs.lines.filter((line) => typeof line.msg === "string" && line.msg.startsWith("route circuit opened"));
      expect(opened).toHaveLength(1);
      expect(opened[0]).toMatchObject({ route: "flaky", failures: 2 });
      const probesFailed = logs.lines.filter((line) => line.msg === "route circuit probe failed; the route stays stopped").length;
      expect(failures).toBe(circuit.failures + probesFailed);
      expect(await counted("flaky", "retry")).toBe(retriesBefore + failures);
      const attempts = async () =>
        (await redis.xrange(archiveOutboxKey(harness!.prefix), "-", "+"))
          .flatMap(([, fields]) => parseOutboxEntry(fields))
          .filter((record): record is AttemptRecord => "kind" in record && record.kind === "attempt");
      await expect.poll(async () => (await attempts()).length).toBe(failures + events.length);
      const outcomes = (await attempts()).map((attempt) => attempt.outcome);
      expect(outcomes.filter((outcome) => outcome === "retry")).toHaveLength(failures);
      expect(outcomes.filter((outcome) => outcome === "delivered")).toHaveLength(events.length);
    } finally {
      await closeRedis(redis);
    }
  });

  it("when a route refuses one event (422) between two failures of another, then the refusal is a dead letter at once and closes the count: two failures apart do not open the circuit", async () => {
    const failing = userEvent();
    const refused = userEvent();
    let failingSeen = 0;
    downstream = await startSinkServer(async (request) => {
      if (request.headers["webhook-id"] === refused.id) return { status: 422, body: "no" };
      failingSeen += 1;
      if (failingSeen === 2) {
        // The second failure comes only once the refusal is a dead letter.
        await expect.poll(() => harness!.queues.forRoute("steady").getJobState(jobIdFor(refused.id)), { timeout: 20_000 }).toBe("failed");
      }
      return failingSeen <= 2 ? { status: 503, body: "busy" } : { status: 200 };
    });
    const logs = capturedLogger("info");
    harness = await createDispatchHarness(redisUrl, [testRoute("steady", downstream.url, { maxAttemptsPerEvent: 5, concurrency: 2 })]);
    harness.startDispatcher({ circuit, logger: logs.logger });
    await harness.store.store(failing, { origin: "webhook" });
    await expect.poll(async () => (await harness!.queues.forRoute("steady").getJob(jobIdFor(failing.id)))?.attemptsMade).toBe(1);
    await harness.store.store(refused, { origin: "webhook" });

    await expect.poll(() => harness!.queues.forRoute("steady").getJobState(jobIdFor(failing.id)), { timeout: 20_000 }).toBe("completed");
    const [letter] = await collectDeadLetters(harness.queues);
    expect(letter).toMatchObject({ eventId: refused.id, attempts: 1, failedReason: "downstream answered 422: no" });
    expect(logs.lines.some((line) => typeof line.msg === "string" && line.msg.startsWith("route circuit opened"))).toBe(false);
  });
});
