import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it, inject, vi } from "vitest";
import { deliveryMarkGatherMs } from "../../src/queue/event-ledger.js";
import { jobIdFor } from "../../src/queue/job-id.js";
import { deliveryQueueBullPrefix, deliveryQueueName } from "../../src/queue/queue-names.js";
import { closeRedis, createRedis, untilReady } from "../../src/redis/redis-connection.js";
import { createDispatchHarness, testRoute, type DispatchHarness } from "../helpers/dispatch-harness.js";
import { capturedLogger } from "../helpers/captured-logger.js";
import { userEvent } from "../helpers/fixtures.js";
import { ledgerKeys } from "../helpers/ledger-keys.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";

const redisUrl = inject("redisUrl");

// A delivered job completes with its delivered mark in one script call (mark-at-completion.ts).
describe("dispatch: the delivered mark in the job's completion", () => {
  let harness: DispatchHarness | undefined;
  const sinks: SinkServer[] = [];
  afterEach(async () => {
    vi.useRealTimers();
    await harness?.close();
    await Promise.all(sinks.splice(0).map((sink) => sink.close()));
  });

  it("when delivered jobs complete, then each one's mark is in the ledger by the time the job reads completed", async () => {
    // One delivery at a time, each answered after 30 ms: the loop below watches each job
    // complete, reading its state every few hundred µs.
    const sink = await startSinkServer(async () => (await sleep(30), {}));
    sinks.push(sink);
    // The worker's ledger as the service makes it: what it marks apart waits for others.
    harness = await createDispatchHarness(redisUrl, [testRoute("a", sink.url, { concurrency: 1 })], undefined, { gatherMarksMs: deliveryMarkGatherMs });
    const events = Array.from({ length: 10 }, () => userEvent());
    for (const event of events) await harness.store.store(event, { origin: "webhook" });
    harness.startDispatcher();
    const queue = harness.queues.forRoute("a");
    // The state first, then the mark: a completion that landed before its mark (a mark sent
    // apart, gathered for 20 ms) would show here as completed with no delivery recorded.
    for (const event of events) {
      const job = (await queue.getJob(jobIdFor(event.id)))!;
      let state = await job.getState();
      while (state !== "completed") {
        expect(["waiting", "active"]).toContain(state);
        state = await job.getState();
      }
      expect(await harness.ledger.deliveredAt(event.id, "a")).toBeGreaterThan(0);
    }
    expect(sink.requests).toHaveLength(10);
  });

  it("when BullMQ refuses a delivered job's completion (its lock taken by another worker), then the delivery's mark stands and the job's next run completes without sending it again", async () => {
    let answer = () => {};
    const answered = new Promise<void>((resolve) => (answer = resolve));
    const sink = await startSinkServer(async () => (await answered, { status: 204 }));
    sinks.push(sink);
    harness = await createDispatchHarness(redisUrl, [testRoute("a", sink.url)]);
    const logs = capturedLogger("info");
    harness.startDispatcher({ stalledIntervalMs: 100, logger: logs.logger });
    const event = userEvent();
    await harness.store.store(event, { origin: "webhook" });
    await sink.untilReceived(1);
    // Another worker holds the lock: the completion is refused, the job stays active.
    const lock = `${deliveryQueueBullPrefix(harness.prefix, "a")}:${deliveryQueueName("a")}:${jobIdFor(event.id)}:lock`;
    const redis = createRedis(redisUrl, "client");
    try {
      await untilReady(redis);
      expect(await redis.set(lock, "another-worker", "XX")).toBe("OK");
      answer();
      // The finish ran: its mark is there, and BullMQ refused the completion.
      await expect.poll(() => harness!.ledger.deliveredAt(event.id, "a"), { timeout: 10_000 }).toBeGreaterThan(0);
      expect(await harness.queues.forRoute("a").getJobState(jobIdFor(event.id))).toBe("active");
      // That worker's lock expires: the job is taken up again as stalled.
      await redis.del(lock);
    } finally {
      await closeRedis(redis);
    }

    const queue = harness.queues.forRoute("a");
    await expect.poll(async () => (await queue.getJob(jobIdFor(event.id)))?.returnvalue?.status, { timeout: 20_000 }).toBe("already_delivered");
    expect((await queue.getJob(jobIdFor(event.id)))!.stalledCounter).toBe(1);
    expect(await harness.ledger.deliveredAt(event.id, "a")).toBeGreaterThan(0);
    expect(sink.requests).toHaveLength(1);
    // The refusal is BullMQ's own error, as its moveToFinished raises it, and said.
    const refused = logs.lines.find((line) => line.route === "a" && Number(line.level) === 40);
    expect((refused?.err as { message?: string } | undefined)?.message).toBe(`Lock mismatch for job ${jobIdFor(event.id)}. Cmd moveToFinished from active`);
  });

  it("when an event's record is in an older bucket than the newest (stored before the bucket turned), then its completion still marks that record", async () => {
    const sink = await startSinkServer();
    sinks.push(sink);
    // A week's ledger, in buckets of a day: yesterday's record is in the bucket before the newest.
    harness = await createDispatchHarness(redisUrl, [testRoute("a", sink.url)], undefined, { ledgerTtlSeconds: 604_800 });
    const event = userEvent();
    const receivedAt = Date.now() - 86_400_000;
    vi.useFakeTimers({ toFake: ["Date"], now: receivedAt });
    await harness.store.store(event, { origin: "webhook" });
    vi.useRealTimers();
    const logs = capturedLogger("info");
    harness.startDispatcher({ logger: logs.logger });
    await sink.untilReceived(1);

    await expect.poll(() => harness!.ledger.deliveredAt(event.id, "a")).toBeGreaterThan(receivedAt);
    const record = await harness.ledger.get(event.id);
    expect(record?.receivedAt).toBe(receivedAt);
    expect(record?.routes).toEqual(["a"]);
    // In the completion's own call: not completed the usual way with the mark apart.
    expect(logs.lines.filter((line) => Number(line.level) >= 40)).toEqual([]);
  });

  it("when an event's ledger record is gone (its job outlived the dedupe window), then its completion records the delivery all the same, in its own call", async () => {
    const sink = await startSinkServer();
    sinks.push(sink);
    harness = await createDispatchHarness(redisUrl, [testRoute("a", sink.url)]);
    const event = userEvent();
    await harness.store.store(event, { origin: "webhook" });
    const redis = createRedis(redisUrl, "client");
    try {
      await untilReady(redis);
      await redis.del(...(await ledgerKeys(redis, harness.prefix)));
    } finally {
      await closeRedis(redis);
    }
    const logs = capturedLogger("info");
    harness.startDispatcher({ logger: logs.logger });
    await sink.untilReceived(1);

    await expect.poll(() => harness!.ledger.deliveredAt(event.id, "a")).toBeGreaterThan(0);
    expect(await harness.ledger.lookup(event.id)).toBe("delivered_only");
    expect(logs.lines.filter((line) => Number(line.level) >= 40)).toEqual([]);
  });
});
