import { Queue } from "bullmq";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { DeliveryJobData } from "../../src/queue/delivery-job.js";
import { jobIdFor } from "../../src/queue/job-id.js";
import { createOrphanedRoutes } from "../../src/queue/orphaned-routes.js";
import { deliveryQueueBullPrefix, deliveryQueueName } from "../../src/queue/queue-names.js";
import { createRedis, untilReady } from "../../src/redis/redis-connection.js";
import { createDispatchHarness, testRoute, type DispatchHarness } from "../helpers/dispatch-harness.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { until } from "../helpers/until.js";

/** `routes move` hands a removed route's jobs to a configured one: once per route, whatever the target kept of its own jobs. */
describe("moving a removed route's events", () => {
  const redisUrl = inject("redisUrl");
  const redis = createRedis(redisUrl, "worker");
  let sink: SinkServer;
  let harness: DispatchHarness;

  beforeAll(async () => {
    await untilReady(redis);
    sink = await startSinkServer();
    harness = await createDispatchHarness(redisUrl, [testRoute("main", sink.url)]);
    harness.startDispatcher();
  });
  afterAll(async () => {
    await harness?.close();
    await sink?.close();
    redis.disconnect();
  });

  it("when the target delivered an event whose job is no longer kept, then the moved copy is not sent again: the ledger's mark is read", async () => {
    const event = userEvent();
    await harness.store.store(event, { origin: "webhook" });
    await sink.until((requests) => requests.some((request) => request.headers["webhook-id"] === event.id));
    const main = harness.queues.forRoute("main");
    await until("main's job completed", async () => (await main.getJob(jobIdFor(event.id)))?.finishedOn !== undefined, { everyMs: 25 });
    // Trimmed, as COMPLETED_JOB_RETENTION_* does after an hour or 1,000 jobs.
    await (await main.getJob(jobIdFor(event.id)))!.remove();

    // The same event waits in a route that is gone.
    const gone = new Queue<DeliveryJobData>(deliveryQueueName("old"), { connection: redis, prefix: deliveryQueueBullPrefix(harness.prefix, "old") });
    await gone.add(event.type, { event, origin: "webhook", receivedAt: Date.now() }, { jobId: jobIdFor(event.id) });
    const orphaned = createOrphanedRoutes(redis, harness.prefix, ["main"]);
    try {
      expect(await orphaned.move("old", main)).toBe(1);
      await until("the moved job finished", async () => (await main.getJob(jobIdFor(event.id)))?.finishedOn !== undefined, { everyMs: 25 });
      expect((await main.getJob(jobIdFor(event.id)))!.returnvalue).toMatchObject({ status: "already_delivered" });
      expect(sink.requests.filter((request) => request.headers["webhook-id"] === event.id)).toHaveLength(1);
    } finally {
      await orphaned.close();
      await gone.close();
    }
  });
});
