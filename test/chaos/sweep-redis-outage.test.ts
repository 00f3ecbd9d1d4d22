import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startEmulator } from "../../src/emulator/start-emulator.js";
import { startRedisServer, type RedisServer } from "../../src/redis/redis-server.js";
import { call, control, tenantEnv, type ControlDelivery } from "../integration/emulator-test-kit.js";
import { createStream } from "../integration/emulator-test-kit.js";
import { sweepStatus, sweepingEnv, until } from "../integration/sweep-test-kit.js";
import { testCredentials } from "../helpers/start-test-service.js";
import { startChaosSink } from "./chaos-sink.js";
import { recordChaosResult } from "./record-chaos-result.js";
import { routeFigures } from "./route-figures.js";
import { startFrontDoor } from "../helpers/start-front-door.js";
import { startServiceProcess } from "../helpers/start-service-process.js";
import { useCleanup } from "../helpers/cleanup.js";

const ratePerSecond = 20;
// The tenant's timing at half its real pace: its 4 attempts span about 3.5 s instead of 7.
// What the scenario needs is an outage of about three of the tenant's retry windows, so
// every duration below is half of the real-timing scenario's (docs/reliability.md).
const timeScale = 0.5;
const emitMs = 20_000;
const outageStartMs = 5_000;
const outageMs = 10_000;

/**
 * Scenario (docs/reliability.md, "Redis away for three retry windows"): the tenant (the
 * emulator at half its real timing: 4 attempts over about 3.5 s) pushes 20 events a second
 * for 20 s while Redis is killed for 10 s. The receiver answers 503 meanwhile and the tenant
 * gives up on those events; once Redis is back the sweep finds them in the tenant's
 * failed-deliveries list and recovers them. No one acts: every emitted event must reach
 * the downstream.
 */
describe("chaos: Redis away for three of the tenant's retry windows", () => {
  const cleanup = useCleanup("all", { quiet: true });

  it("when Redis is killed for 10 s (three of the tenant's retry windows) while it pushes 20 events/s, then every emitted event reaches the sink with no one acting", async () => {
    const started = Date.now();
    const dir = await mkdtemp(join(tmpdir(), "sk-chaos-sweep-"));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    let redis: RedisServer = await startRedisServer({ dir, appendOnly: true, extraArgs: ["--appendfsync", "always"] });
    cleanup.push(() => redis.stop());
    // The service's Redis at an address the test holds: the restarted server may bind any free port.
    const redisDoor = await startFrontDoor();
    cleanup.push(() => redisDoor.close());
    redisDoor.open(redis.url);
    const emulator = await startEmulator({ timeScale });
    cleanup.push(() => emulator.close());
    const sink = await startChaosSink();
    cleanup.push(() => sink.close());
    const door = await startFrontDoor();
    cleanup.push(() => door.close());
    const publicUrl = door.url;
    const streamId = await createStream(emulator, `${publicUrl}/webhooks`, {
      auth: { method: "basic", username: testCredentials.username, password: testCredentials.password },
      types: ["user.updated"],
    });
    const service = await startServiceProcess("all", sweepingEnv({ publicUrl, sinkUrl: sink.url, tenant: tenantEnv(emulator) }, { REDIS_URL: `redis://127.0.0.1:${redisDoor.port}` }));
    cleanup.push(() => service.stop());
    door.open(service.publicUrl!);
    await until("the first sweep", async () => (await sweepStatus(service)).streams[0]?.lastRunAt !== null);

    // The tenant's traffic: 20 events a second, paced by the clock, for 40 s.
    const emitted: string[] = [];
    const emitting = (async () => {
      const begin = Date.now();
      for (let n = 0; Date.now() - begin < emitMs; n++) {
        const due = begin + (n * 1000) / ratePerSecond;
        if (due > Date.now()) await new Promise((resolve) => setTimeout(resolve, due - Date.now()));
        const answer = await call(emulator, "POST", "/emulator/events", { body: { type: "user.updated", data: { object: { user_id: `auth0|chaos-${n}` } } } });
        emitted.push((answer.body as { id: string }).id);
      }
    })();
    await until("the outage's start", async () => emitted.length >= (outageStartMs / 1000) * ratePerSecond);
    await redis.kill();
    redisDoor.shut();
    const killedAt = Date.now();
    await until(`${outageMs / 1000} s of outage`, async () => Date.now() - killedAt >= outageMs, outageMs + 10_000);
    redis = await startRedisServer({ dir, appendOnly: true, extraArgs: ["--appendfsync", "always"] });
    redisDoor.open(redis.url);
    await emitting;

    await sink.untilAccepted(emitted, 240_000);
    // One more complete sweep after everything arrived, so a repeat would show.
    const last = (await sweepStatus(service)).streams[0]?.lastRunAt ?? "";
    await until("one more complete sweep", async () => ((await sweepStatus(service)).streams[0]?.lastRunAt ?? "") > last);

    const { deliveries } = await control<{ deliveries: ControlDelivery[] }>(emulator, `/deliveries?stream_id=${streamId}`);
    const givenUp = deliveries.filter((delivery) => delivery.status === "failed").length;
    const origins = new Map<string, string>();
    for (const request of sink.sink.requests) origins.set(String(request.headers["webhook-id"]), String(request.headers["x-streamkeeper-origin"]));
    const recovered = [...origins.values()].filter((origin) => origin === "reconcile").length;
    const route = routeFigures("default", sink, emitted, 0);
    await recordChaosResult("sweep-redis-outage", {
      fault: `Redis SIGKILLed for ${outageMs / 1000} s (the tenant's retry window is about ${7 * timeScale} s) while the tenant pushes ${ratePerSecond} events/s for ${emitMs / 1000} s; nobody runs reconcile`,
      acknowledged: emitted.length,
      emitted: emitted.length,
      givenUpByTenant: givenUp,
      recoveredBySweep: recovered,
      routes: [route],
      durationMs: Date.now() - started,
    });
    expect(givenUp, "the outage made the tenant give up on deliveries").toBeGreaterThan(0);
    expect(recovered, "the sweep recovered what the tenant gave up on").toBeGreaterThan(0);
    expect(route.lost).toBe(0);
  }, 420_000);
});
