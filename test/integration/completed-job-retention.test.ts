import { Queue } from "bullmq";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bullPrefix, deliveryQueueName } from "../../src/queue/queue-names.js";
import { createRedis } from "../../src/queue/redis-connection.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";

describe("completed delivery jobs are kept by count as well as age", () => {
  let sink: SinkServer;
  let service: TestService;
  beforeAll(async () => {
    sink = await startSinkServer();
    service = await startTestService({ DOWNSTREAM_URL: sink.url, COMPLETED_JOB_RETENTION_COUNT: "5", COMPLETED_JOB_RETENTION_SECONDS: "3600" });
  });
  afterAll(async () => {
    await service.close();
    await sink.close();
  });

  it("when 40 events are delivered within the age limit, then at most COMPLETED_JOB_RETENTION_COUNT jobs stay", async () => {
    const events = Array.from({ length: 40 }, () => userEvent());
    for (const event of events) expect((await service.post("/webhooks/est_38ANnv8pQhqsZrX2VFbftv", JSON.stringify(event))).status).toBe(202);
    await sink.until((requests) => new Set(requests.map((r) => r.headers["webhook-id"])).size === events.length);

    const redis = createRedis(service.config.env.REDIS_URL!, "client");
    const queue = new Queue(deliveryQueueName("default"), { connection: redis, prefix: bullPrefix(service.config.env.QUEUE_PREFIX) });
    try {
      // The last completion trims the list; wait for it rather than for the clock.
      const deadline = Date.now() + 10_000;
      let completed = await queue.getCompletedCount();
      while (completed > 5 && Date.now() < deadline) {
        await new Promise((ok) => setTimeout(ok, 50));
        completed = await queue.getCompletedCount();
      }
      expect(completed).toBeGreaterThan(0);
      expect(completed).toBeLessThanOrEqual(5);
    } finally {
      await queue.close();
      redis.disconnect();
    }
  });
});
