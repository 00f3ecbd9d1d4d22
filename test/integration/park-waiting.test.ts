import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, inject, it } from "vitest";
import { parseOutboxEntry, type AttemptRecord } from "../../src/archive/archive-record.js";
import { archiveOutboxKey, createArchiveOutbox } from "../../src/archive/archive-outbox.js";
import { latePriority, reconcilePriority, type DeliveryJobData } from "../../src/queue/delivery-job.js";
import { createDeliveryQueues, type DeliveryQueues } from "../../src/queue/delivery-queues.js";
import { parkWaiting } from "../../src/queue/park-waiting.js";
import { dispatchTotal } from "../../src/metrics/registry.js";
import { createRedis, untilReady, type RedisClient } from "../../src/redis/redis-connection.js";
import { capturedLogger } from "../helpers/captured-logger.js";
import { testRoute } from "../helpers/dispatch-harness.js";
import { userEvent } from "../helpers/fixtures.js";

const redisUrl = inject("redisUrl");
const route = "crm";
const hourMs = 3_600_000;

async function parkedCount(): Promise<number> {
  return (await dispatchTotal.get()).values.find((value) => value.labels.route === route && value.labels.outcome === "parked")?.value ?? 0;
}

/**
 * `routes park` (queue/park-waiting.ts) on a route's real BullMQ queue, no worker taking
 * jobs: which waiting jobs leave (old ones, in each waiting state, past a page of 500),
 * what the archive's outbox gets for each, and what happens when the outbox refuses.
 */
describe("parking a route's waiting events", () => {
  let redis: RedisClient | undefined;
  let queues: DeliveryQueues | undefined;
  afterEach(async () => {
    await queues?.close();
    redis?.disconnect();
  });

  async function setUp() {
    const prefix = `test-${randomUUID()}`;
    redis = createRedis(redisUrl, "client");
    await untilReady(redis);
    queues = createDeliveryQueues(redis, prefix, [testRoute(route, "http://127.0.0.1:9/")], { ageSeconds: 60, count: 1000 });
    return { prefix, redis, queue: queues.forRoute(route) };
  }

  /** The outbox's records, in order. */
  async function outboxRecords(client: RedisClient, prefix: string): Promise<AttemptRecord[]> {
    return (await client.xrange(archiveOutboxKey(prefix), "-", "+")).flatMap(([, fields]) => parseOutboxEntry(fields) as AttemptRecord[]);
  }

  function jobData(timeMs: number | undefined, receivedAt: number, extra: Partial<DeliveryJobData> = {}): DeliveryJobData {
    const event = userEvent(timeMs === undefined ? {} : { time: new Date(timeMs).toISOString() });
    if (timeMs === undefined) delete event.time;
    return { event, origin: "webhook", receivedAt, ...extra };
  }

  it("when old events wait live, late, retrying or for a replay, then each leaves the queue as parked in the outbox; younger ones, those without a time, stay", async () => {
    const { prefix, redis: client, queue } = await setUp();
    const now = Date.now();
    const before = now - hourMs;
    const { logger, lines } = capturedLogger();
    const add = (id: string, data: DeliveryJobData, opts: { priority?: number; delay?: number } = {}) => queue.add(route, data, { jobId: id, ...opts });
    await add("live-old", jobData(before - 1, now - 5000));
    await add("live-at-before", jobData(before, now - 6000));
    await add("live-young", jobData(now, now - 7000));
    await add("no-time", jobData(undefined, now - 8000));
    await add("late-old", jobData(before - 2 * hourMs, now - 3000), { priority: latePriority });
    await add("reconciled-old", jobData(before - hourMs, now - 4000), { priority: reconcilePriority });
    await add("retrying-old", jobData(before - 10, now - 2000), { delay: hourMs });
    await add("replay-old", jobData(before - 20, now - 1000, { replayId: "rpl_1" }), { priority: latePriority });
    expect(await queue.getJobCounts("wait", "prioritized", "delayed")).toEqual({ wait: 4, prioritized: 3, delayed: 1 });
    const countedBefore = await parkedCount();

    const result = await parkWaiting(queue, route, before, { archive: createArchiveOutbox(client, prefix), logger });

    const parkedIds = ["live-old", "late-old", "reconciled-old", "retrying-old", "replay-old"];
    // firstArrival: the earliest arrival among the parked (a replay's since), not among those kept.
    expect(result).toEqual({ parked: 5, firstArrival: now - 5000 });
    const left = await queue.getJobs(["wait", "prioritized", "delayed"]);
    expect(left.map((job) => job.id).sort()).toEqual(["live-at-before", "live-young", "no-time"]);
    const records = await outboxRecords(client, prefix);
    expect(records.map((record) => record.key).sort()).toEqual(parkedIds.map((id) => `${id}:parked`).sort());
    for (const record of records) {
      expect(record).toMatchObject({ kind: "attempt", route, outcome: "parked" });
      expect(record.at).toBeGreaterThanOrEqual(now);
    }
    const replayRecord = records.find((record) => record.key === "replay-old:parked")!;
    expect(replayRecord.replayId).toBe("rpl_1");
    expect(records.filter((record) => "replayId" in record).length).toBe(1);
    expect(await parkedCount()).toBe(countedBefore + 5);
    expect(lines.filter((line) => line.level === 30 && line.route === route)).toEqual([
      expect.objectContaining({ parked: 5, olderThan: new Date(before).toISOString(), msg: "parked the route's waiting events older than the time given: they are in the archive with outcome parked; `replay --outcome parked` sends them" }),
    ]);

    // Nothing left old: parked none, no arrival, said nothing, counted nothing.
    const again = await parkWaiting(queue, route, before, { archive: createArchiveOutbox(client, prefix), logger });
    expect(again).toEqual({ parked: 0 });
    expect(lines.filter((line) => line.route === route)).toHaveLength(1);
    expect(await parkedCount()).toBe(countedBefore + 5);
  });

  it("when more events wait than a page holds and young ones are among them, then every old one is parked", async () => {
    const { prefix, redis: client, queue } = await setUp();
    const now = Date.now();
    const before = now - hourMs;
    // 1,210 jobs in one lane, every 10th young: the pages after the first start past the young ones kept.
    const jobs = Array.from({ length: 1210 }, (_, index) => ({ name: route, data: jobData(index % 10 === 0 ? now : before - 1000 - index, now - index), opts: { jobId: `job-${index}`, priority: latePriority } }));
    await queue.addBulk(jobs);

    const result = await parkWaiting(queue, route, before, { archive: createArchiveOutbox(client, prefix), logger: capturedLogger().logger });

    expect(result).toEqual({ parked: 1089, firstArrival: now - 1209 });
    expect(await queue.getJobCounts("prioritized")).toEqual({ prioritized: 121 });
    expect((await outboxRecords(client, prefix)).length).toBe(1089);
  });

  it("when a worker holds a waiting job's lock (it took it meanwhile), then that job is not parked but delivered, and the others are", async () => {
    const { prefix, redis: client, queue } = await setUp();
    const now = Date.now();
    const before = now - hourMs;
    await queue.add(route, jobData(before - 1, now - 1000), { jobId: "taken" });
    await queue.add(route, jobData(before - 2, now - 2000), { jobId: "waiting" });
    // A worker's lock on the job, as BullMQ's moveToActive sets it: removal is refused.
    await client.set(`${queue.toKey("taken")}:lock`, "a-worker-token");

    const result = await parkWaiting(queue, route, before, { archive: createArchiveOutbox(client, prefix), logger: capturedLogger().logger });

    expect(result).toEqual({ parked: 1, firstArrival: now - 2000 });
    expect((await queue.getJobs(["wait"])).map((job) => job.id)).toEqual(["taken"]);
    expect((await outboxRecords(client, prefix)).map((record) => record.key)).toEqual(["waiting:parked"]);
  });

  it("when the archive's outbox refuses the parked events, then they go back to the queue as they were, the park stops with an error, none counted, and the error is logged", async () => {
    const { prefix, redis: client, queue } = await setUp();
    const now = Date.now();
    const before = now - hourMs;
    const { logger, lines } = capturedLogger();
    await queue.add(route, jobData(now, now - 1000), { jobId: "live-young" });
    await queue.add(route, jobData(before - 2, now - 2000), { jobId: "late-old", priority: latePriority });
    await queue.add(route, jobData(before - 3, now - 3000), { jobId: "retrying-old", delay: hourMs });
    // The outbox's key holds a string: every XADD fails (WRONGTYPE), as a Redis refusing writes would.
    await client.set(archiveOutboxKey(prefix), "not a stream");
    const countedBefore = await parkedCount();

    await expect(parkWaiting(queue, route, before, { archive: createArchiveOutbox(client, prefix), logger })).rejects.toThrow(
      "the archive's outbox refused the parked events (Redis); 0 were parked before, the rest are back in the queue: park again once Redis takes writes",
    );

    // The late job back in its lane with its priority; the retrying one, after the refusal, never touched.
    const back = await queue.getJobs(["wait", "prioritized", "delayed"]);
    expect(back.map((job) => [job.id, job.opts.priority ?? 0, job.data.receivedAt]).sort()).toEqual([
      ["late-old", latePriority, now - 2000],
      ["live-young", 0, now - 1000],
      ["retrying-old", 0, now - 3000],
    ]);
    expect(await queue.getJobCounts("wait", "prioritized", "delayed")).toEqual({ wait: 1, prioritized: 1, delayed: 1 });
    expect(await parkedCount()).toBe(countedBefore);
    // Once, for the page refused, not again and again for the job put back.
    expect(lines.filter((line) => line.level === 50)).toEqual([expect.objectContaining({ route, jobs: 1, msg: "parking: the archive's outbox did not take these events; they go back to the route's queue, and the park stops" })]);
    expect(lines.filter((line) => line.level === 30)).toEqual([]);
  });
});
