import { randomUUID } from "node:crypto";
import { Queue } from "bullmq";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { archiveOutboxKey, createArchiveOutbox } from "../../src/archive/archive-outbox.js";
import { eventsMatching } from "../../src/archive/archive-queries.js";
import { createArchiveWriter } from "../../src/archive/create-archive-writer.js";
import type { DeliveryJobData } from "../../src/queue/delivery-job.js";
import { jobIdFor } from "../../src/queue/job-id.js";
import { createOrphanedRoutes } from "../../src/queue/orphaned-routes.js";
import { deliveryQueueBullPrefix, deliveryQueueName } from "../../src/queue/queue-names.js";
import { closeRedis, createRedis, untilReady } from "../../src/redis/redis-connection.js";
import { createLogger } from "../../src/logging/logger.js";
import { createArchiveDatabase, type ArchiveDatabase } from "../helpers/archive-database.js";
import { userEvent } from "../helpers/fixtures.js";

/**
 * An event's outcome on a route follows what happened to its job there (README.md, The
 * archive): `routes move` and `routes drop` say `moved` and `dropped` to the archive, so
 * search never lists it `pending` or `retry` for a job that is gone.
 */
describe("routes move and drop: what the archive says of the events", () => {
  const redis = createRedis(inject("redisUrl"), "worker");
  const writerRedis = createRedis(inject("redisUrl"), "worker");
  const prefix = `test-${randomUUID()}`;
  let db: ArchiveDatabase;
  const queues: Queue[] = [];
  const queueOf = (route: string) => {
    const queue = new Queue<DeliveryJobData>(deliveryQueueName(route), { connection: redis, prefix: deliveryQueueBullPrefix(prefix, route) });
    queues.push(queue);
    return queue;
  };

  beforeAll(async () => {
    await untilReady(redis);
    db = await createArchiveDatabase();
  });
  afterAll(async () => {
    await Promise.all(queues.map((queue) => queue.pause().then(() => queue.obliterate({ force: true })).catch(() => {}).then(() => queue.close())));
    await redis.del(archiveOutboxKey(prefix));
    await closeRedis(writerRedis);
    redis.disconnect();
    await db?.drop();
  });

  it("when a removed route's events are moved or dropped, then each shows moved or dropped for it in search, not pending or retry", async () => {
    const outbox = createArchiveOutbox(redis, prefix);
    const receivedAt = Date.now() - 1000;
    const moved = [userEvent(), userEvent(), userEvent()];
    const dropped = [userEvent(), userEvent()];
    await outbox([...moved.map((event) => ({ kind: "event" as const, event, origin: "webhook" as const, receivedAt, routes: ["old"] })), ...dropped.map((event) => ({ kind: "event" as const, event, origin: "webhook" as const, receivedAt, routes: ["gone"] }))]);
    // One had a failed attempt first: its last outcome was `retry`.
    await outbox([{ kind: "attempt", eventId: moved[0]!.id, receivedAt, route: "old", key: `${moved[0]!.id}:1`, at: receivedAt + 10, status: 503, outcome: "retry" }]);
    for (const event of moved) await queueOf("old").add(event.type, { event, origin: "webhook", receivedAt }, { jobId: jobIdFor(event.id), delay: 60_000 });
    for (const event of dropped) await queueOf("gone").add(event.type, { event, origin: "webhook", receivedAt }, { jobId: jobIdFor(event.id) });

    const orphaned = createOrphanedRoutes(redis, prefix, ["main"], outbox);
    try {
      expect(await orphaned.move("old", queueOf("main"))).toBe(3);
      expect(await orphaned.drop("gone")).toBe(2);
    } finally {
      await orphaned.close();
    }
    const writer = createArchiveWriter({ redis: writerRedis, pool: db.pool, queuePrefix: prefix, logger: createLogger("silent"), retentionDays: 30 });
    try {
      await expect.poll(async () => redis.xlen(archiveOutboxKey(prefix))).toBe(0);
    } finally {
      await writer.close();
    }
    const found = async (route: string, outcome: string) => (await eventsMatching(db.pool, { route, outcome }, 100)).events.map((event) => event.id).sort();
    expect(await found("old", "moved")).toEqual(moved.map((event) => event.id).sort());
    expect(await found("gone", "dropped")).toEqual(dropped.map((event) => event.id).sort());
    // Its last outcome is the move, whatever came before it.
    expect((await eventsMatching(db.pool, { id: moved[0]!.id }, 1)).events[0]?.outcomes).toEqual({ old: "moved" });
    expect(await found("old", "pending")).toEqual([]);
    expect(await found("gone", "pending")).toEqual([]);
  });
});
