import { randomUUID } from "node:crypto";
import { UnrecoverableError, Worker } from "bullmq";
import { afterEach, describe, expect, inject, it } from "vitest";
import { forgetEntityJobs } from "../../src/admin/forget-entity-jobs.js";
import type { CloudEvent } from "../../src/events/cloud-event.js";
import { latePriority, type DeliveryJobData } from "../../src/queue/delivery-job.js";
import { createDeliveryQueues, type DeliveryQueue, type DeliveryQueues } from "../../src/queue/delivery-queues.js";
import { deliveryQueueBullPrefix, deliveryQueueName } from "../../src/queue/queue-names.js";
import { closeRedis, createRedis, untilReady, type RedisClient } from "../../src/redis/redis-connection.js";
import { testRoute } from "../helpers/dispatch-harness.js";
import { userEvent } from "../helpers/fixtures.js";

const redisUrl = inject("redisUrl");

function eventOf(entity: string): CloudEvent {
  const event = userEvent();
  (event.data as { object: { user_id: string } }).object.user_id = entity;
  return event;
}

/**
 * Erasure in Redis (admin/forget-entity-jobs.ts) on real BullMQ queues: which of an
 * entity's jobs go (kept deliveries, dead letters, replays' jobs not yet sent), which stay
 * (live deliveries still waiting, other entities' jobs), and the queue's events stream
 * entries of the jobs removed (a failure's reason may echo the payload).
 */
describe("erasure of an entity's delivery jobs", () => {
  let redis: RedisClient | undefined;
  let queues: DeliveryQueues | undefined;
  afterEach(async () => {
    await queues?.close();
    redis?.disconnect();
  });

  /** Runs each job through a real worker once: completed, or failed for good where `fail` says so. */
  async function runThrough(queue: DeliveryQueue, prefix: string, route: string, jobs: Array<{ id: string; data: DeliveryJobData; fail?: boolean }>) {
    const connection = createRedis(redisUrl, "worker");
    const failing = new Set(jobs.filter((job) => job.fail).map((job) => job.id));
    const worker = new Worker<DeliveryJobData>(deliveryQueueName(route), async (job) => {
      if (failing.has(job.id!)) throw new UnrecoverableError(`downstream answered 400: ${job.data.event.id}`);
    }, { connection, prefix: deliveryQueueBullPrefix(prefix, route) });
    try {
      await queue.addBulk(jobs.map((job) => ({ name: route, data: job.data, opts: { jobId: job.id } })));
      await expect.poll(async () => (await queue.getCompletedCount()) + (await queue.getFailedCount())).toBe(jobs.length);
    } finally {
      await worker.close();
      await closeRedis(connection);
    }
  }

  /** The job ids the queue's events stream still names. */
  async function idsInEvents(queue: DeliveryQueue): Promise<Set<string>> {
    const entries = await redis!.xrange(queue.keys.events!, "-", "+");
    return new Set(entries.flatMap(([, fields]) => fields.filter((_, index) => fields[index - 1] === "jobId")));
  }

  /** Queues for these routes on a prefix of their own, and an entity of the test's own. */
  async function setUp(routes: string[]) {
    const prefix = `test-${randomUUID()}`;
    redis = createRedis(redisUrl, "client");
    await untilReady(redis);
    queues = createDeliveryQueues(redis, prefix, routes.map((name) => testRoute(name, "http://127.0.0.1:9/", { maxAttemptsPerEvent: 1 })), { ageSeconds: 600, count: 1000 });
    return { prefix, client: redis, queues, entity: `auth0|forget-${randomUUID()}` };
  }

  it("when an entity is forgotten, then its kept deliveries, dead letters and waiting replay jobs go with their events entries; live jobs waiting and other entities' jobs stay", async () => {
    const { prefix, queues, entity } = await setUp(["crm", "slack"]);
    const other = `auth0|keep-${randomUUID()}`;
    const data = (who: string, extra: Partial<DeliveryJobData> = {}): DeliveryJobData => ({ event: eventOf(who), origin: "webhook", receivedAt: Date.now(), ...extra });
    const crm = queues.forRoute("crm");
    const slack = queues.forRoute("slack");
    await runThrough(crm, prefix, "crm", [
      { id: "crm-delivered", data: data(entity) },
      { id: "crm-dead", data: data(entity), fail: true },
      { id: "crm-other-delivered", data: data(other) },
      { id: "crm-other-dead", data: data(other), fail: true },
    ]);
    await runThrough(slack, prefix, "slack", [{ id: "slack-dead", data: data(entity), fail: true }]);
    // Waiting, no worker now: live ones in each lane and retrying, a replay's in each.
    await crm.add("crm", data(entity), { jobId: "crm-live-waiting" });
    await crm.add("crm", data(entity), { jobId: "crm-live-late", priority: latePriority });
    await crm.add("crm", data(entity), { jobId: "crm-live-retrying", delay: 3_600_000 });
    await crm.add("crm", data(entity, { replayId: "rpl_1" }), { jobId: "crm-replay-waiting" });
    await slack.add("slack", data(entity, { replayId: "rpl_1" }), { jobId: "slack-replay-late", priority: latePriority });
    await slack.add("slack", data(entity, { replayId: "rpl_1" }), { jobId: "slack-replay-retrying", delay: 3_600_000 });
    await slack.add("slack", data(other, { replayId: "rpl_1" }), { jobId: "slack-other-replay" });
    expect([...(await idsInEvents(crm))].sort()).toEqual(expect.arrayContaining(["crm-dead", "crm-delivered", "crm-other-dead", "crm-other-delivered"]));

    expect(await forgetEntityJobs(queues, entity)).toBe(6);

    const left = async (queue: DeliveryQueue) => (await queue.getJobs(["completed", "failed", "wait", "delayed", "prioritized", "active"])).map((job) => job.id).sort();
    expect(await left(crm)).toEqual(["crm-live-late", "crm-live-retrying", "crm-live-waiting", "crm-other-dead", "crm-other-delivered"]);
    expect(await left(slack)).toEqual(["slack-other-replay"]);
    const crmEvents = await idsInEvents(crm);
    expect(["crm-delivered", "crm-dead", "crm-replay-waiting"].filter((id) => crmEvents.has(id))).toEqual([]);
    expect(["crm-other-delivered", "crm-other-dead", "crm-live-waiting"].every((id) => crmEvents.has(id))).toBe(true);
    const slackEvents = await idsInEvents(slack);
    expect(["slack-dead", "slack-replay-late", "slack-replay-retrying"].filter((id) => slackEvents.has(id))).toEqual([]);
    expect(slackEvents.has("slack-other-replay")).toBe(true);

    // Asked again: nothing left to remove.
    expect(await forgetEntityJobs(queues, entity)).toBe(0);
  });

  it("when a job of the entity refuses removal (a worker holds its lock), then it is not counted and its events entries stay", async () => {
    const { prefix, client, queues, entity } = await setUp(["crm"]);
    const crm = queues.forRoute("crm");
    const data = (): DeliveryJobData => ({ event: eventOf(entity), origin: "webhook", receivedAt: Date.now() });
    await runThrough(crm, prefix, "crm", [{ id: "held", data: data(), fail: true }, { id: "free", data: data(), fail: true }]);
    // A worker's lock on the dead letter, as a replay taking it would hold: BullMQ refuses to remove it.
    await client.set(`${crm.toKey("held")}:lock`, "a-worker-token");

    expect(await forgetEntityJobs(queues, entity)).toBe(1);

    expect((await crm.getJobs(["failed"])).map((job) => job.id)).toEqual(["held"]);
    const events = await idsInEvents(crm);
    expect([events.has("held"), events.has("free")]).toEqual([true, false]);
  });

  it("when more than 500 of a queue's events entries name the entity's jobs, then every one goes", async () => {
    const { prefix, client, queues, entity } = await setUp(["crm"]);
    const crm = queues.forRoute("crm");
    // 300 delivered jobs: each leaves several entries (added, waiting, active, completed), well past 500.
    await runThrough(crm, prefix, "crm", Array.from({ length: 300 }, (_, index) => ({ id: `job-${index}`, data: { event: eventOf(entity), origin: "webhook" as const, receivedAt: Date.now() } })));
    expect((await client.xlen(crm.keys.events!)) > 500).toBe(true);

    expect(await forgetEntityJobs(queues, entity)).toBe(300);

    expect(await idsInEvents(crm)).toEqual(new Set());
  });
});
