import { randomUUID } from "node:crypto";
import { Queue } from "bullmq";
import { afterAll, describe, expect, inject, it } from "vitest";
import { jobIdFor } from "../../src/queue/job-id.js";
import { bullPrefix, deliveryQueueName } from "../../src/queue/queue-names.js";
import { createRedis } from "../../src/redis/redis-connection.js";
import { useCleanup } from "../helpers/cleanup.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer } from "../helpers/sink-server.js";
import { startTestService } from "../helpers/start-test-service.js";

/**
 * A second signal (start-command.ts calls the service's `hurry()`) reaches the workers that
 * drain an earlier release's key layout too, not only this layout's dispatcher: their
 * deliveries in flight go back to their queue instead of holding the stop.
 */
describe("a hurried stop while the earlier key layout drains", () => {
  const redis = createRedis(inject("redisUrl"), "worker");
  const cleanup = useCleanup("all");
  afterAll(async () => {
    await cleanup.run();
    redis.disconnect();
  });

  it("when a drained job's delivery takes 8 s and the stop is hurried, then the stop ends before the answer and the job waits in the earlier queue, not completed", async () => {
    const prefix = `test-${randomUUID()}`;
    const slow = await startSinkServer(() => ({ status: 200, delayMs: 8000 }));
    cleanup.push(() => slow.close());
    // What an earlier release queued: the route's queue under the shared `{prefix}` tag.
    const legacy = new Queue(deliveryQueueName("default"), { connection: redis, prefix: bullPrefix(prefix) });
    cleanup.push(() => legacy.close());
    const event = userEvent();
    await legacy.add(event.type, { event, origin: "webhook", receivedAt: Date.now() }, { jobId: jobIdFor(event.id) });

    const service = await startTestService({ QUEUE_PREFIX: prefix, DOWNSTREAM_URL: slow.url, SHUTDOWN_TIMEOUT_MS: "60000", RECONCILE_SWEEP_INTERVAL_SECONDS: "0", STREAM_WATCH_INTERVAL_SECONDS: "0" }, "worker");
    await slow.untilReceived(1, 60_000);
    const stopped = service.close();
    service.hurry();
    await stopped;

    // Unhurried, the stop would wait for the 8 s answer and complete the job.
    expect(await legacy.getCompletedCount()).toBe(0);
    expect(await legacy.getFailedCount()).toBe(0);
    expect(await legacy.getJobCountByTypes("waiting", "delayed", "prioritized", "active")).toBe(1);
  }, 120_000);
});
