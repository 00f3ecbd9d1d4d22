import { afterEach, describe, expect, inject, it } from "vitest";
import { replayDeadLetters } from "../../src/admin/replay-dead-letters.js";
import { capturedLogger } from "../helpers/captured-logger.js";
import { collectDeadLetters } from "../helpers/collect-dead-letters.js";
import { createDispatchHarness, testRoute, type DispatchHarness } from "../helpers/dispatch-harness.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";

const redisUrl = inject("redisUrl");

/**
 * DISPATCH_RETRY_WINDOW_SECONDS (scaled down to 400 ms): without maxAttemptsPerEvent, a
 * delivery is retried until it still fails that long after its first failure; a replay
 * starts the window again.
 */
describe("dispatch: the retry window", () => {
  let harness: DispatchHarness | undefined;
  let downstream: SinkServer | undefined;
  afterEach(async () => {
    await harness?.close();
    await downstream?.close();
  });

  it("when a route without maxAttemptsPerEvent keeps failing, then the event is a dead letter once the window has passed, and a replay gets a new window", async () => {
    downstream = await startSinkServer(() => ({ status: 503 }));
    harness = await createDispatchHarness(redisUrl, [testRoute("patient", downstream.url, { maxAttemptsPerEvent: undefined })]);
    const logs = capturedLogger("info");
    harness.startDispatcher({ retryWindowMs: 400, backoffBaseMs: 20, backoffMaxMs: 50, logger: logs.logger });
    const event = userEvent();
    await harness.store.store(event, { origin: "webhook" });

    await expect.poll(() => collectDeadLetters(harness!.queues), { timeout: 20_000, interval: 50 }).toHaveLength(1);
    const [letter] = await collectDeadLetters(harness.queues);
    expect(letter!.failedReason).toBe("downstream answered 503; still failing 0.4 s after the first failure (DISPATCH_RETRY_WINDOW_SECONDS)");
    // Retried for the whole window, not cut short by a count: it failed for good at least
    // 400 ms after its first failure (recorded in the job).
    const failedFor = async () => {
      const job = await harness!.queues.forRoute("patient").getJob(event.id);
      return { attempts: job!.attemptsMade, windowMs: job!.finishedOn! - job!.data.failingSince! };
    };
    const first = await failedFor();
    expect(first.attempts).toBeGreaterThanOrEqual(2);
    expect(first.windowMs).toBeGreaterThanOrEqual(400);
    // The dead letter's warning names the window that ended it, and no maximum of attempts.
    const dead = logs.lines.filter((line) => line.eventId === event.id && line.level === 40);
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({ retryWindowMs: 400, attempts: first.attempts });
    expect(dead[0]).not.toHaveProperty("maxAttempts");

    const requestsBefore = downstream.requests.length;
    await replayDeadLetters(harness.queues, { ids: [event.id] });
    await downstream.until((requests) => requests.length > requestsBefore);
    await expect.poll(() => collectDeadLetters(harness!.queues), { timeout: 20_000, interval: 50 }).toHaveLength(1);
    const again = await failedFor();
    expect(again.attempts).toBeGreaterThanOrEqual(2);
    expect(again.windowMs).toBeGreaterThanOrEqual(400);
  });

  it("when an event has been failing for an hour-long window, then its dead letter says the window in hours", async () => {
    downstream = await startSinkServer(() => ({ status: 503 }));
    harness = await createDispatchHarness(redisUrl, [testRoute("hourly", downstream.url, { maxAttemptsPerEvent: undefined })]);
    // A backoff long enough that the test can stand in for the hour between two attempts.
    harness.startDispatcher({ retryWindowMs: 3_600_000, backoffBaseMs: 600_000, backoffMaxMs: 600_000 });
    const event = userEvent();
    await harness.store.store(event, { origin: "webhook" });
    const queue = harness.queues.forRoute("hourly");
    await expect.poll(() => queue.getJobState(event.id)).toBe("delayed");
    // An hour has passed since its first failure (what the job records of it), and it is due.
    const job = (await queue.getJob(event.id))!;
    expect(job.data.failingSince).toBeGreaterThan(0);
    await job.updateData({ ...job.data, failingSince: job.data.failingSince! - 3_600_000 });
    await job.promote();

    await expect.poll(() => collectDeadLetters(harness!.queues), { timeout: 20_000, interval: 50 }).toHaveLength(1);
    const [letter] = await collectDeadLetters(harness.queues);
    expect(letter!.failedReason).toBe("downstream answered 503; still failing 1 h after the first failure (DISPATCH_RETRY_WINDOW_SECONDS)");
    expect(letter!.attempts).toBe(2);
  });

  it("when the window is set while an event is already being retried, then its window starts at its next failure and it still ends as a dead letter", async () => {
    downstream = await startSinkServer(() => ({ status: 503 }));
    harness = await createDispatchHarness(redisUrl, [testRoute("late", downstream.url, { maxAttemptsPerEvent: undefined })]);
    // First without a window: the job fails and waits for its retry.
    const before = harness.startDispatcher({ backoffBaseMs: 600_000, backoffMaxMs: 600_000 });
    const event = userEvent();
    await harness.store.store(event, { origin: "webhook" });
    const queue = harness.queues.forRoute("late");
    await expect.poll(() => queue.getJobState(event.id)).toBe("delayed");
    await before.close();
    expect((await queue.getJob(event.id))!.data.failingSince).toBeUndefined();

    // Restarted with DISPATCH_RETRY_WINDOW_SECONDS set (scaled down to 300 ms).
    harness.startDispatcher({ retryWindowMs: 300, backoffBaseMs: 20, backoffMaxMs: 50 });
    await (await queue.getJob(event.id))!.promote();
    await expect.poll(() => collectDeadLetters(harness!.queues), { timeout: 20_000, interval: 50 }).toHaveLength(1);
    const job = (await queue.getJob(event.id))!;
    expect(job.attemptsMade).toBeGreaterThanOrEqual(3);
    expect(job.finishedOn! - job.data.failingSince!).toBeGreaterThanOrEqual(300);
  });

  it("when a retry window is set and a route refuses an event for good, even once the window has passed, then its dead letter's warning names no window; one out of attempts names them", async () => {
    const refused = userEvent();
    const exhausted = userEvent();
    const lateRefused = userEvent();
    downstream = await startSinkServer((request) => {
      if (request.headers["webhook-id"] === refused.id) return { status: 422 };
      // Refused on its second attempt, answered only after the 300 ms window since its first failure.
      if (request.headers["webhook-id"] === lateRefused.id) return seenLate();
      return { status: 503 };
    });
    let lateSeen = 0;
    const seenLate = () => (++lateSeen === 1 ? { status: 503 } : { status: 422, delayMs: 400 });
    harness = await createDispatchHarness(redisUrl, [testRoute("counted", downstream.url, { maxAttemptsPerEvent: 2 })]);
    const logs = capturedLogger("info");
    harness.startDispatcher({ retryWindowMs: 300, backoffBaseMs: 20, backoffMaxMs: 50, logger: logs.logger });
    await harness.store.store(refused, { origin: "webhook" });
    await harness.store.store(exhausted, { origin: "webhook" });
    await harness.store.store(lateRefused, { origin: "webhook" });
    await expect.poll(() => collectDeadLetters(harness!.queues), { timeout: 20_000, interval: 50 }).toHaveLength(3);
    const dead = logs.lines.filter((line) => line.level === 40);
    expect(dead.map((line) => line.eventId).sort()).toEqual([refused.id, exhausted.id, lateRefused.id].sort());
    expect(dead.find((line) => line.eventId === lateRefused.id)).toMatchObject({ attempts: 2, reason: "downstream answered 422" });
    // The refusals name no window; the exhausted one gives its attempts (and the window too,
    // should a loaded machine have spaced its two attempts past it).
    for (const line of dead.filter((candidate) => candidate.eventId !== exhausted.id)) expect(line).not.toHaveProperty("retryWindowMs");
    expect(dead.find((line) => line.eventId === exhausted.id)).toMatchObject({ attempts: 2, maxAttempts: 2 });
  });
});
