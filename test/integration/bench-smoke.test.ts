import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it, inject } from "vitest";
import type { LoadOptions } from "../../bench/lib/load-types.js";
import { runLoad } from "../../bench/lib/run-load.js";
import { startChild, tsxArgs } from "../../bench/lib/start-child.js";
import { createDeliveryQueues } from "../../src/queue/delivery-queues.js";
import { jobIdFor } from "../../src/queue/job-id.js";
import { createRedis, untilReady } from "../../src/redis/redis-connection.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer } from "../helpers/sink-server.js";

/**
 * The bench harness works: its load process drives real requests with unique,
 * real-shaped events in both modes. No timing is asserted here: figures belong to
 * `npm run bench`, not to the test suite.
 */
describe("bench harness", () => {
  const ids: string[] = [];
  let server: Server;
  let url: string;

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = "";
      req.setEncoding("utf8").on("data", (chunk: string) => (body += chunk));
      req.on("end", () => {
        const events = JSON.parse(body) as Array<{ id: string; type: string; data: { context: { bench_sent_at: number } } }>;
        for (const event of Array.isArray(events) ? events : [events]) {
          if (event.type === "user.updated" && typeof event.data.context.bench_sent_at === "number") ids.push(event.id);
        }
        res.writeHead(202).end();
      });
    });
    await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks/est_38ANnv8pQhqsZrX2VFbftv`;
  });
  afterAll(() => new Promise<void>((ok) => server.close(() => ok())));

  const options = (overrides: Partial<LoadOptions>): LoadOptions => ({ url, connections: 2, durationS: 1, batchSize: 1, streamId: "est_38ANnv8pQhqsZrX2VFbftv", ...overrides });

  it("when autocannon drives batches for a second, then every event it sent has its own id and every request was answered", async () => {
    ids.length = 0;
    const result = await runLoad(options({ batchSize: 3 }));
    expect(result.generator).toBe("autocannon");
    expect(result.errors).toBe(0);
    expect(result.ok).toBeGreaterThan(0);
    expect(result.latencyMs.p99).toBeDefined();
    expect(new Set(ids).size).toBe(ids.length);
    // Requests cut at the end of the run reach the server without an answer being counted.
    expect(ids.length).toBeGreaterThanOrEqual(result.eventsAcknowledged);
    expect(ids.every((id) => /^evt_[1-9A-HJ-NP-Za-km-z]{22}$/.test(id))).toBe(true);
  });

  it("when a paced run sends 20 requests, then each is answered once, with its own event id", async () => {
    ids.length = 0;
    const result = await runLoad(options({ overallRate: 20, paced: true }));
    expect(result.generator).toBe("paced");
    expect(result).toMatchObject({ ok: 20, errors: 0, eventsAcknowledged: 20 });
    expect(new Set(ids).size).toBe(20);
  });

  it("when the floor server gets an event, then it answers 202 once the event is a job in its route queue", async () => {
    const prefix = `test-${randomUUID()}`;
    const floor = await startChild<{ url: string }>(tsxArgs(new URL("../../bench/processes/floor-server.ts", import.meta.url).pathname, [inject("redisUrl"), prefix]));
    const redis = createRedis(inject("redisUrl"), "client");
    try {
      await untilReady(redis);
      const event = userEvent();
      const response = await fetch(`${floor.info.url}/webhooks/${event.a0stream}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(event) });
      expect(response.status).toBe(202);
      const queues = createDeliveryQueues(redis, prefix, [{ name: "default", match: ["*"], url: "http://127.0.0.1:9/", headers: {}, timeoutMs: 1000, maxAttemptsPerEvent: 1, concurrency: 1 }], { ageSeconds: 60, count: 1000 });
      const job = await queues.forRoute("default").getJob(jobIdFor(event.id));
      expect(job?.data.event).toEqual(event);
      await queues.close();
    } finally {
      redis.disconnect();
      await floor.stop();
    }
  });

  it("when jobs wait in a route queue, then the floor worker POSTs each event to the sink once and leaves the queue empty", async () => {
    const prefix = `test-${randomUUID()}`;
    const sink = await startSinkServer();
    const redis = createRedis(inject("redisUrl"), "client");
    const worker = await startChild(tsxArgs(new URL("../../bench/processes/floor-worker.ts", import.meta.url).pathname, [inject("redisUrl"), prefix, sink.url, "post"]));
    try {
      await untilReady(redis);
      const queues = createDeliveryQueues(redis, prefix, [{ name: "default", match: ["*"], url: sink.url, headers: {}, timeoutMs: 1000, maxAttemptsPerEvent: 1, concurrency: 1 }], { ageSeconds: 60, count: 1000 });
      const events = Array.from({ length: 5 }, () => userEvent());
      for (const event of events) await queues.forRoute("default").add(event.type, { event, origin: "webhook", receivedAt: Date.now() }, { jobId: jobIdFor(event.id) });
      const received = await sink.untilReceived(5);
      expect(received.map((request) => request.headers["webhook-id"]).sort()).toEqual(events.map((event) => event.id).sort());
      await expect.poll(async () => Object.values(await queues.forRoute("default").getJobCounts("wait", "active", "delayed")).reduce((sum, count) => sum + count, 0), { timeout: 30_000 }).toBe(0);
      await queues.close();
    } finally {
      await worker.stop();
      redis.disconnect();
      await sink.close();
    }
  });
});
