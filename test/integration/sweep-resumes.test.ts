import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { describe, expect, inject, it } from "vitest";
import { startEmulator } from "../../src/emulator/start-emulator.js";
import { sweepKey } from "../../src/queue/queue-names.js";
import { startFrontDoor } from "../helpers/start-front-door.js";
import { startServiceProcess } from "../helpers/start-service-process.js";
import { startSinkServer } from "../helpers/sink-server.js";
import { testCredentials } from "../helpers/start-test-service.js";
import { createStream, emit, tenantEnv } from "./emulator-test-kit.js";
import { byEventId, failedCount, sweepingEnv, until } from "./sweep-test-kit.js";
import { useCleanup } from "../helpers/cleanup.js";
import { until as untilAnswer } from "../helpers/until.js";

const minuteMs = 60_000;

/**
 * "A restart neither skips a window" (README.md#the-sweep-failed-deliveries-found-without-being-told): a stream with a checkpoint reads on from
 * it however long the service was down, not only RECONCILE_SWEEP_LOOKBACK_SECONDS back (that
 * is the first sweep's reach); only what lies beyond DEDUPE_TTL_SECONDS is left, and said.
 * Scaled down: a lookback of 1 s, so the failures are older than it when the service starts.
 */
describe("sweep: resuming from a checkpoint after a long downtime", () => {
  const cleanup = useCleanup("all", { quiet: true });

  it("when the service was down longer than the lookback, then the sweep reads from each stream's checkpoint and recovers what failed meanwhile; a checkpoint beyond DEDUPE_TTL_SECONDS is cut there with a warning naming the range and the command", async () => {
    const emulator = await startEmulator({ timeScale: 0.001 });
    cleanup.push(() => emulator.close());
    const sink = await startSinkServer();
    cleanup.push(() => sink.close());
    const redis = new Redis(inject("redisUrl"));
    cleanup.push(() => redis.quit());
    const door = await startFrontDoor();
    cleanup.push(() => door.close());
    const publicUrl = door.url;
    const auth = { method: "basic" as const, username: testCredentials.username, password: testCredentials.password };
    const recent = await createStream(emulator, `${publicUrl}/webhooks`, { auth, types: ["user.created"] });
    const ancient = await createStream(emulator, `${publicUrl}/webhooks`, { auth, types: ["user.deleted"] });
    const lost = [await emit(emulator, "user.created", { object: { user_id: "auth0|lost-1" } }), await emit(emulator, "user.created", { object: { user_id: "auth0|lost-2" } })];
    const lostAncient = await emit(emulator, "user.deleted", { object: { user_id: "auth0|lost-3" } });
    await until("the deliveries failed", async () => (await failedCount(emulator, recent)) === 2 && (await failedCount(emulator, ancient)) === 1);
    // Older than the 1 s lookback by the time the service sweeps.
    const failedBy = Date.now();
    await until("the failures older than the lookback", async () => Date.now() > failedBy + 2000);

    // Swept before, then down: one stream 10 minutes, the other two hours (beyond the 1 h of ids kept).
    const queuePrefix = `test-${randomUUID()}`;
    const started = Date.now();
    await redis.hset(sweepKey(queuePrefix, `stream:${recent}`), "checkpoint", started - 10 * minuteMs);
    await redis.hset(sweepKey(queuePrefix, `stream:${ancient}`), "checkpoint", started - 120 * minuteMs);
    const env = sweepingEnv(
      { publicUrl, sinkUrl: sink.url, tenant: tenantEnv(emulator) },
      { QUEUE_PREFIX: queuePrefix, RECONCILE_SWEEP_LOOKBACK_SECONDS: "1", DEDUPE_TTL_SECONDS: "3600", COMPLETED_JOB_RETENTION_SECONDS: "60" },
    );
    const service = await startServiceProcess("all", env);
    cleanup.push(() => service.stop());
    door.open(service.publicUrl!);

    await sink.until((requests) => byEventId(requests).size >= 3, 60_000);
    const seen = byEventId(sink.requests);
    for (const id of [...lost, lostAncient]) expect(seen.get(id), id).toEqual(["reconcile"]);

    // The warning travels through the process's stdout, the deliveries through HTTP: either may arrive first.
    const warningsNow = () =>
      service
        .output()
        .split("\n")
        .filter((line) => line.includes("older than DEDUPE_TTL_SECONDS"))
        .map((line) => JSON.parse(line) as { streamId: string; skippedFrom: string; skippedTo: string; msg: string });
    const warnings = await untilAnswer("the warning of the checkpoint beyond DEDUPE_TTL_SECONDS", async () => warningsNow().length > 0 && warningsNow());
    expect(warnings.map((warning) => warning.streamId)).toEqual([ancient]);
    const [warning] = warnings;
    // The skipped range: from the checkpoint (less the overlap) to an hour before the sweep.
    expect(Date.parse(warning!.skippedFrom)).toBeLessThanOrEqual(started - 120 * minuteMs);
    expect(Date.parse(warning!.skippedTo)).toBeGreaterThan(started - 61 * minuteMs);
    expect(Date.parse(warning!.skippedTo)).toBeLessThanOrEqual(Date.now() - 60 * minuteMs);
    expect(warning!.msg).toContain(`streamkeeper reconcile --since ${warning!.skippedFrom} --until ${warning!.skippedTo} --stream ${ancient} --dry-run`);
  });
});
