import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, describe, expect, inject, it } from "vitest";
import { startEmulator, type Emulator } from "../../src/emulator/start-emulator.js";
import { sweepKey } from "../../src/queue/queue-names.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";
import { until } from "../helpers/until.js";
import { createStream, emit, tenantEnv } from "./emulator-test-kit.js";
import { adminToken, byEventId, failedCount, sweepStatus } from "./sweep-test-kit.js";

/**
 * CONTRACT.md "The sweep": a sweep reads back RECONCILE_SWEEP_OVERLAP_SECONDS before its
 * checkpoint. Two failed deliveries a second boundary apart, and the checkpoint placed one
 * overlap after that boundary: the overlap, and only it, decides that the later one is read
 * (and recovered) and the earlier one is not. Shown failing by hand in
 * src/sweep/create-sweeper.ts sweepStart: `checkpoint - at.overlapMs` made `checkpoint` (the
 * later one missed), `checkpoint - 2 * at.overlapMs` (the earlier one read too) and
 * `checkpoint - at.overlapMs + 1000` (a second short: the later one missed).
 */
describe("contract: RECONCILE_SWEEP_OVERLAP_SECONDS", () => {
  let emulator: Emulator | undefined;
  let sink: SinkServer | undefined;
  let service: TestService | undefined;
  afterAll(async () => {
    await service?.close();
    await sink?.close();
    await emulator?.close();
  });

  it("when the checkpoint is one overlap past a second boundary, then the failed delivery after the boundary is recovered and the one before it is not read", async () => {
    emulator = await startEmulator({ timeScale: 0.001 });
    sink = await startSinkServer();
    const streamId = await createStream(emulator, "http://127.0.0.1:9/webhooks");
    const before = await emit(emulator, "user.created", { object: { user_id: "auth0|before-the-overlap" } });
    // The next whole second after the first event's time, and the second event in it.
    const boundary = (Math.floor(Date.now() / 1000) + 1) * 1000;
    await until("the clock past the boundary", () => Date.now() >= boundary, { everyMs: 10 });
    const within = await emit(emulator, "user.created", { object: { user_id: "auth0|within-the-overlap" } });
    await until("both deliveries failed", async () => (await failedCount(emulator!, streamId)) === 2);
    // A sweep reads up to the start of its own second: that second over, the second event is in its reach.
    await until("the clock a second past the boundary", () => Date.now() >= boundary + 1000, { everyMs: 10 });

    const queuePrefix = `test-${randomUUID()}`;
    const overlapSeconds = 600;
    const redis = new Redis(inject("redisUrl"));
    try {
      await redis.hset(sweepKey(queuePrefix, `stream:${streamId}`), "checkpoint", String(boundary + overlapSeconds * 1000));
    } finally {
      redis.disconnect();
    }
    service = await startTestService({
      ...tenantEnv(emulator),
      QUEUE_PREFIX: queuePrefix,
      DOWNSTREAM_URL: sink.url,
      ADMIN_TOKEN: adminToken,
      RECONCILE_SWEEP_STREAMS: streamId,
      RECONCILE_SWEEP_OVERLAP_SECONDS: String(overlapSeconds),
      // No deep pass: it reads the whole lookback again, whatever the checkpoint (its own test: sweep-deep-pass).
      RECONCILE_SWEEP_DEEP_INTERVAL_SECONDS: "0",
      RECONCILE_SWEEP_INTERVAL_SECONDS: "3600",
      STREAM_WATCH_INTERVAL_SECONDS: "0",
    });
    const [stream] = await until("the sweep's end", async () => ((status) => status.streams[0]?.lastRunAt && status.streams)((await sweepStatus(service!))));
    expect(stream).toMatchObject({ streamId, found: 1, recovered: 1, lastError: null });
    await sink.until((requests) => byEventId(requests).has(within));
    expect(byEventId(sink.requests).get(within)).toEqual(["reconcile"]);
    expect(byEventId(sink.requests).has(before)).toBe(false);
  });
});
