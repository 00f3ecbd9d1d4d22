import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { jobIdFor } from "../../src/queue/job-id.js";
import { deliveryQueueBullPrefix, deliveryQueueName } from "../../src/queue/queue-names.js";
import { userEvent } from "../helpers/fixtures.js";
import { createTestDatabase, type TestDatabase } from "../helpers/archive-database.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";

const adminToken = "event-counts-token";

interface Described {
  arrival: { replays: number };
  routes: Array<{ route: string; attempts: number }>;
  timeline?: { routes: Array<{ route: string; attempts: Array<{ replayId?: string }> }> };
}

/** `GET /admin/events/:id` counts agree with its timeline (README.md, The archive). */
describe("archive: an event's counts and its timeline", () => {
  let db: TestDatabase;
  let sink: SinkServer;
  let service: TestService;
  let redis: Redis;
  const admin = (path: string, init: RequestInit = {}) => fetch(`${service.adminUrl}${path}`, { ...init, headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json", ...(init.headers ?? {}) } });

  beforeAll(async () => {
    db = await createTestDatabase();
    sink = await startSinkServer();
    service = await startTestService({ ARCHIVE: "on", ARCHIVE_DATABASE_URL: db.url, DOWNSTREAM_URL: sink.url, ADMIN_TOKEN: adminToken });
    redis = new Redis(inject("redisUrl"));
  });
  afterAll(async () => {
    redis?.disconnect();
    await service?.close();
    await sink?.close();
    await db?.drop();
  });

  it("when the delivered job is no longer kept and the event was replayed, then the attempts and replays counted are the timeline's", async () => {
    const since = new Date(Date.now() - 60_000).toISOString();
    const event = userEvent();
    expect((await service.post("/webhooks/est_38ANnv8pQhqsZrX2VFbftv", JSON.stringify(event))).status).toBe(202);
    await sink.until((requests) => requests.some((request) => request.headers["webhook-id"] === event.id));
    // Trimmed, as COMPLETED_JOB_RETENTION_* does after an hour or 1,000 jobs: Redis alone now answers 0 attempts.
    const queue = new Queue(deliveryQueueName("default"), { connection: redis, prefix: deliveryQueueBullPrefix(service.config.env.QUEUE_PREFIX, "default") });
    try {
      await expect.poll(async () => (await queue.getJob(jobIdFor(event.id)))?.finishedOn !== undefined).toBe(true);
      await (await queue.getJob(jobIdFor(event.id)))!.remove();
    } finally {
      await queue.close();
    }
    await expect.poll(async () => ((await (await admin(`/admin/events/${event.id}`)).json()) as Described).timeline?.routes[0]?.attempts.length).toBe(1);

    const started = await admin("/admin/replays", { method: "POST", body: JSON.stringify({ route: "default", since }) });
    expect(started.status).toBe(202);
    const { replayId } = (await started.json()) as { replayId: string };
    await expect.poll(async () => ((await (await admin(`/admin/replays/${replayId}`)).json()) as { state: string; delivered: number })).toMatchObject({ state: "done", delivered: 1 });

    const described = (await (await admin(`/admin/events/${event.id}`)).json()) as Described;
    const replaysInTimeline = new Set(described.timeline!.routes.flatMap((route) => route.attempts.flatMap((attempt) => (attempt.replayId ? [attempt.replayId] : []))));
    expect(replaysInTimeline).toEqual(new Set([replayId]));
    expect(described.arrival.replays).toBe(1);
    expect(described.routes).toEqual([expect.objectContaining({ route: "default", attempts: 1 })]);
  });
});
