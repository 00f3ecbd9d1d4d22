import { Queue, Worker } from "bullmq";
import { afterAll, describe, expect, it, inject } from "vitest";
import { randomUUID } from "node:crypto";
import { collectDeadLetters } from "../helpers/collect-dead-letters.js";
import { replayDeadLetters } from "../../src/admin/replay-dead-letters.js";
import { startEmulator, type Emulator } from "../../src/emulator/start-emulator.js";
import { legacyJobs } from "../../src/upgrade/legacy-queue-layout.js";
import { jobIdFor } from "../../src/queue/job-id.js";
import { bullPrefix, deliveryQueueName, reconcileQueueBullPrefix, reconcileQueueName } from "../../src/queue/queue-names.js";
import { createRedis } from "../../src/redis/redis-connection.js";
import { userEvent } from "../helpers/fixtures.js";
import { inspectStore } from "../helpers/inspect-store.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";
import { createStream, emit, settled, tenantEnv } from "./emulator-test-kit.js";
import { useCleanup } from "../helpers/cleanup.js";
import { refusedUrl } from "../helpers/explicit-ports.js";

/**
 * An upgrade with jobs left under the single-hash-tag layout of an earlier release, in
 * every state it could leave them, and no one in the loop: the new worker role delivers
 * them, recovers the reconcile job, and moves the dead letter where `dead-letters` sees it.
 */
describe("upgrading with jobs left under the earlier key layout", () => {
  const redisUrl = inject("redisUrl");
  const redis = createRedis(redisUrl, "worker");
  const cleanup = useCleanup("all");
  let service: TestService | undefined;
  let sink: SinkServer;
  let emulator: Emulator;
  afterAll(async () => {
    await service?.close();
    await cleanup.run();
    redis.disconnect();
  });

  it("when an earlier release left waiting, delayed, prioritized, stalled, failed and reconcile jobs, then a worker of this release delivers each once, moves the dead letter to this layout and the gauge reads 0", async () => {
    const prefix = `test-${randomUUID()}`;
    sink = await startSinkServer();
    cleanup.push(() => sink.close());
    emulator = await startEmulator({ timeScale: 0.001 });
    cleanup.push(() => emulator.close());
    // A push that failed before the upgrade: only the earlier release's reconcile job recovers it.
    const brokenStream = await createStream(emulator, `${refusedUrl}/webhooks`, { types: ["user.deleted"] });
    const lost = await emit(emulator, "user.deleted", { object: { user_id: "auth0|lost" } });
    expect((await settled(emulator, lost)).status).toBe("failed");

    // What an earlier release queued: every queue under the shared `{prefix}` tag.
    const old = { connection: redis, prefix: bullPrefix(prefix) };
    const deliveries = new Queue(deliveryQueueName("default"), old);
    const reconciles = new Queue(reconcileQueueName, old);
    const oldWorker = new Worker(deliveryQueueName("default"), null, { ...old, connection: createRedis(redisUrl, "worker"), lockDuration: 1000 });
    cleanup.push(() => Promise.all([deliveries.close(), reconciles.close()]));
    const add = (event = userEvent(), options = {}) =>
      deliveries.add(event.type, { event, origin: "webhook", receivedAt: Date.now() }, { jobId: jobIdFor(event.id), attempts: 1, ...options }).then(() => event.id);
    // A dead letter, and a job whose worker died mid-delivery (active, its lock left to expire).
    const deadLetter = await add();
    const failing = (await oldWorker.getNextJob("old-release"))!;
    await failing.moveToFailed(new Error("downstream answered 400"), "old-release");
    const stalled = await add();
    expect((await oldWorker.getNextJob("old-release"))?.data.event.id).toBe(stalled);
    await oldWorker.close();
    await oldWorker.disconnect();
    const waiting = await add();
    const prioritized = await add(userEvent(), { priority: 10 });
    const delayed = await add(userEvent(), { delay: 2000 });
    const reconcileJob = await reconciles.add("reconcile", { eventId: lost, streamId: brokenStream, force: false });
    expect(await legacyJobs(redis, prefix, deliveryQueueName("default"))).toEqual({ live: 4, failed: 1 });

    service = await startTestService(
      { ...tenantEnv(emulator), QUEUE_PREFIX: prefix, DOWNSTREAM_URL: sink.url, DISPATCH_LOCK_DURATION_MS: "5000", RECONCILE_SWEEP_INTERVAL_SECONDS: "0", STREAM_WATCH_INTERVAL_SECONDS: "0" },
      "worker",
    );
    const drained = [stalled, waiting, prioritized, delayed, lost];
    const ids = () => sink.requests.map((request) => String(request.headers["webhook-id"]));
    await sink.until(() => drained.every((id) => ids().includes(id)), 45_000);

    // The drain stops once nothing is left to run; the dead letter moved; the gauge says 0.
    const gauge = async () => (await (await fetch(`${service!.adminUrl}/metrics`)).text()).match(/streamkeeper_legacy_delivery_jobs\{route="default"\} (\d+)/)?.[1];
    const gaugeDeadline = Date.now() + 45_000;
    for (let reads = await gauge(); reads !== "0"; reads = await gauge()) {
      if (Date.now() > gaugeDeadline) throw new Error(`streamkeeper_legacy_delivery_jobs still reads ${reads}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(await legacyJobs(redis, prefix, deliveryQueueName("default"))).toEqual({ live: 0, failed: 0 });
    // Its worker on the old prefix is closed at the next look that still finds it empty.
    await expect.poll(() => deliveries.getWorkersCount(), { interval: 200 }).toBe(0);
    expect(await legacyJobs(redis, prefix, reconcileQueueName)).toMatchObject({ live: 0 });
    expect((await reconciles.getJob(reconcileJob.id!))?.returnvalue).toMatchObject({ eventId: lost, outcome: "recovered" });
    // Job ids of the reconcile queue go on from the earlier release's.
    // Past the old counter by a margin: ids the earlier release still gives out meanwhile do not collide.
    expect(Number(await redis.get(`${reconcileQueueBullPrefix(prefix)}:${reconcileQueueName}:id`))).toBeGreaterThanOrEqual(Number(reconcileJob.id) + 1_000_000);

    const store = await inspectStore(service.config, redisUrl);
    try {
      const letters = await collectDeadLetters(store.queues);
      expect(letters).toEqual([expect.objectContaining({ route: "default", eventId: deadLetter, failedReason: "downstream answered 400", attempts: 1 })]);
      // Marked to read the ledger before it sends: an earlier release may have replayed it meanwhile.
      expect((await store.queues.forRoute("default").getJob(letters[0]!.jobId))?.data.recheck).toBe(true);
      // Replayed like any dead letter of this layout: delivered once.
      expect(await replayDeadLetters(store.queues, { ids: [`default/${letters[0]!.jobId}`] })).toEqual({ replayed: 1, unknown: [] });
      await sink.until(() => ids().includes(deadLetter), 45_000);
      const deadline = Date.now() + 45_000;
      while (Object.values(await store.queues.forRoute("default").getJobCounts("waiting", "active", "delayed", "prioritized")).some((count) => count > 0)) {
        if (Date.now() > deadline) throw new Error("delivery jobs still pending");
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      await store.close();
    }
    expect(ids().sort()).toEqual([...drained, deadLetter].sort()); // each once, none missing
    const recovered = sink.requests.find((request) => request.headers["webhook-id"] === lost)!;
    expect(recovered.headers["x-streamkeeper-origin"]).toBe("reconcile");
  });
});
