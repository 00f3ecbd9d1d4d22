import { reconcileAttempts, reconcileBackoffType } from "../../src/reconcile/reconcile-backoff.js";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { closeRedis, createRedis, untilReady } from "../../src/redis/redis-connection.js";
import { createReconcileQueue, type ReconcileQueue } from "../../src/reconcile/create-reconcile-queue.js";
import { tenantId } from "../helpers/fixtures.js";

/**
 * The producer side of the durable reconcile queue, with no worker running: what a job is
 * made of when `POST /admin/reconcile` (or `reconcile <id>`) queues it, and what its
 * outcome reads before it ran. README "Reconcile": jobs are durable, tried 5 times.
 */
describe("the reconcile queue, before any worker takes its jobs", () => {
  const redis = createRedis(inject("redisUrl"), "worker");
  let queue: ReconcileQueue;

  beforeAll(async () => {
    await untilReady(redis);
    queue = createReconcileQueue(redis, `rq-${randomUUID().slice(0, 8)}`);
  });
  afterAll(async () => {
    await queue.queue.obliterate({ force: true });
    await queue.close();
    await closeRedis(redis);
  });

  it("when 501 ids are queued (more than one batch of 500), then each id has exactly one job, in the order given, not forced unless asked", async () => {
    const ids = Array.from({ length: 501 }, () => tenantId("evt"));
    const enqueued = await queue.enqueue(ids, { streamId: "est_x" });
    expect(enqueued.map((job) => job.eventId)).toEqual(ids);
    expect(new Set(enqueued.map((job) => job.jobId)).size).toBe(501);
    expect(await queue.queue.getWaitingCount()).toBe(501);
    const [first, last] = await Promise.all([queue.queue.getJob(enqueued[0]!.jobId), queue.queue.getJob(enqueued[500]!.jobId)]);
    for (const job of [first, last]) expect(job).toMatchObject({ name: "reconcile", data: { streamId: "est_x", force: false } });
    expect(first!.data.eventId).toBe(ids[0]);
    expect(last!.data.eventId).toBe(ids[500]);

    const [forced] = await queue.enqueue([ids[0]!], { force: true });
    expect((await queue.queue.getJob(forced!.jobId))!.data).toMatchObject({ eventId: ids[0], force: true });
  });

  it("when a job has not run yet, then its outcome is its state with no result; an unknown job id has none", async () => {
    const [job] = await queue.enqueue([tenantId("evt")]);
    await expect(queue.outcomeOf(job!.jobId)).resolves.toEqual({ state: "waiting", result: undefined });
    await expect(queue.outcomeOf("no-such-job")).resolves.toBeUndefined();
  });

  it("when a job is queued, then it is retried by the reconcile backoff (bounded by RECONCILE_RETRY_FOR_SECONDS, not a count), and kept a week once finished so its outcome stays readable", async () => {
    // A week has nothing else to observe it by: the options BullMQ keeps the job with.
    const [queued] = await queue.enqueue([tenantId("evt")]);
    const job = await queue.queue.getJob(queued!.jobId);
    expect(job!.opts).toMatchObject({ attempts: reconcileAttempts, backoff: { type: reconcileBackoffType, delay: 1000 }, removeOnComplete: { age: 7 * 24 * 3600 }, removeOnFail: { age: 7 * 24 * 3600 } });
  });
});
