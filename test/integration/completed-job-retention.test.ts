import { Queue } from "bullmq";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deliveryQueueBullPrefix, deliveryQueueName } from "../../src/queue/queue-names.js";
import { createRedis } from "../../src/redis/redis-connection.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";
import { until } from "../helpers/until.js";

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
    const queue = new Queue(deliveryQueueName("default"), { connection: redis, prefix: deliveryQueueBullPrefix(service.config.env.QUEUE_PREFIX, "default") });
    try {
      // The last completion trims the list; wait for it rather than for the clock.
      const deadline = Date.now() + 30_000;
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

describe("dedupe does not rest on delivered jobs", () => {
  let sink: SinkServer;
  let service: TestService;
  beforeAll(async () => {
    sink = await startSinkServer();
    // Keep no delivered job at all: only the ledger remembers ids.
    service = await startTestService({ DOWNSTREAM_URL: sink.url, COMPLETED_JOB_RETENTION_COUNT: "0", COMPLETED_JOB_RETENTION_SECONDS: "0" });
  });
  afterAll(async () => {
    await service.close();
    await sink.close();
  });

  it("when an event's delivered job is already gone and its id arrives again, then it is a duplicate, delivered once", async () => {
    const stream = "/webhooks/est_38ANnv8pQhqsZrX2VFbftv";
    const event = userEvent();
    expect((await service.post(stream, JSON.stringify(event))).status).toBe(202);
    await sink.until((requests) => requests.some((r) => r.headers["webhook-id"] === event.id && r.status === 200));

    const redis = createRedis(service.config.env.REDIS_URL!, "client");
    const queue = new Queue(deliveryQueueName("default"), { connection: redis, prefix: deliveryQueueBullPrefix(service.config.env.QUEUE_PREFIX, "default") });
    try {
      // Removed as it completed; wait for the completion rather than for the clock.
      await until("the delivered job removed", async () => (await queue.getJobState(event.id)) === "unknown", { withinMs: 20_000, everyMs: 50 });
    } finally {
      await queue.close();
      redis.disconnect();
    }
    const again = await service.post(stream, JSON.stringify(event));
    expect(await again.json()).toEqual({ accepted: 0, duplicates: 1 });
    // A later event, delivered after anything the repeat could have queued on the route.
    const later = userEvent();
    await service.post(stream, JSON.stringify(later));
    await sink.until((requests) => requests.some((r) => r.headers["webhook-id"] === later.id && r.status === 200));
    expect(sink.requests.filter((r) => r.headers["webhook-id"] === event.id)).toHaveLength(1);
  });
});
