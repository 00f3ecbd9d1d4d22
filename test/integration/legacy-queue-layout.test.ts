import { randomUUID } from "node:crypto";
import { Queue } from "bullmq";
import { afterAll, describe, expect, it, inject } from "vitest";
import { bullPrefix, deliveryQueueName } from "../../src/queue/queue-names.js";
import { createRedis } from "../../src/redis/redis-connection.js";
import { userEvent } from "../helpers/fixtures.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";

describe("upgrading from the single-hash-tag key layout", () => {
  const redis = createRedis(inject("redisUrl"), "worker");
  let service: TestService | undefined;
  afterAll(async () => {
    await service?.close();
    redis.disconnect();
  });

  it("when a route's jobs wait under the earlier layout, then the service says so at start, per route, and leaves them in place", async () => {
    const prefix = `test-${randomUUID()}`;
    // What an earlier release queued: the route's queue under the shared `{prefix}` tag.
    const legacy = new Queue(deliveryQueueName("default"), { connection: redis, prefix: bullPrefix(prefix) });
    await legacy.add("user.updated", { event: userEvent(), origin: "webhook", receivedAt: Date.now() });
    await legacy.add("user.updated", { event: userEvent(), origin: "webhook", receivedAt: Date.now() }, { delay: 60_000 });
    service = await startTestService({ QUEUE_PREFIX: prefix, DOWNSTREAM_URL: "http://127.0.0.1:9/" }, "receiver");
    const metrics = await (await fetch(`${service.adminUrl}/metrics`)).text();
    expect(metrics).toContain('streamkeeper_legacy_delivery_jobs{route="default"} 2');
    expect(await legacy.getJobCounts("wait", "delayed")).toEqual({ wait: 1, delayed: 1 });
    await legacy.close();
  });

  it("when there is nothing under the earlier layout, then the gauge reads 0", async () => {
    await service?.close();
    service = undefined;
    service = await startTestService({ DOWNSTREAM_URL: "http://127.0.0.1:9/" }, "receiver");
    const metrics = await (await fetch(`${service.adminUrl}/metrics`)).text();
    expect(metrics).toContain('streamkeeper_legacy_delivery_jobs{route="default"} 0');
  });
});
