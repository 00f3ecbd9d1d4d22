import { describe, expect, it } from "vitest";
import { startEmulator } from "../../src/emulator/start-emulator.js";
import { startFaultProxy } from "../chaos/start-fault-proxy.js";
import { startFrontDoor } from "../helpers/start-front-door.js";
import { startServiceProcess } from "../helpers/start-service-process.js";
import { startSinkServer } from "../helpers/sink-server.js";
import { testCredentials } from "../helpers/start-test-service.js";
import { control, createStream, emit, tenantEnv, type ControlDelivery } from "./emulator-test-kit.js";
import { byEventId, sweepStatus, sweepingEnv, until } from "./sweep-test-kit.js";
import { useCleanup } from "../helpers/cleanup.js";

/**
 * "A delivery that turns failed after its window was read is still found" (README.md#the-sweep-failed-deliveries-found-without-being-told):
 * the tenant is still retrying an event (our ingress answers 503 through a proxy) while a
 * sweep reads the window that holds it and moves the checkpoint past it; once the tenant
 * gives up, a later sweep, reading back RECONCILE_SWEEP_OVERLAP_SECONDS, finds it.
 */
describe("sweep: a delivery that fails after its window was read", () => {
  const cleanup = useCleanup("all", { quiet: true });

  it("when a delivery turns failed after a sweep read its window, then a later sweep still recovers it", async () => {
    // The delivery stays pending as long as the test needs, not for a span of the tenant's
    // retry delays that a slow machine could outlast: its first attempt is answered 503 at
    // once, its second is held (the emulator waits for it) until a sweep has read past the
    // event, then it and the last two are answered 503 (retry delays 10, 20, 40 ms).
    const emulator = await startEmulator({ timeScale: 0.01, webhookTimeoutMs: 300_000 });
    cleanup.push(() => emulator.close());
    const sink = await startSinkServer();
    cleanup.push(() => sink.close());
    const door = await startFrontDoor();
    cleanup.push(() => door.close());
    let refusing = false;
    let attempts = 0;
    let releaseSecondAttempt = () => {};
    const secondAttemptReleased = new Promise<void>((release) => (releaseSecondAttempt = release));
    const proxy = await startFaultProxy(door.url, async (path) => {
      if (!refusing || !path.startsWith("/webhooks")) return undefined;
      if (++attempts === 2) await secondAttemptReleased;
      return { status: 503, headers: { "retry-after": "1" }, body: "{}" };
    });
    cleanup.push(() => proxy.close());
    cleanup.push(async () => releaseSecondAttempt());
    const auth = { method: "basic" as const, username: testCredentials.username, password: testCredentials.password };
    const streamId = await createStream(emulator, `${proxy.url}/webhooks`, { auth, types: ["user.created"] });
    const service = await startServiceProcess("all", sweepingEnv({ publicUrl: proxy.url, sinkUrl: sink.url, tenant: tenantEnv(emulator) }));
    cleanup.push(() => service.stop());
    door.open(service.publicUrl!);
    await until("the first sweep", async () => (await sweepStatus(service)).streams[0]?.lastRunAt != null);
    expect((await sweepStatus(service)).streams.map((stream) => stream.streamId)).toEqual([streamId]);

    refusing = true;
    const eventId = await emit(emulator, "user.created", { object: { user_id: "auth0|late" } });
    const delivery = async () => (await control<{ deliveries: ControlDelivery[] }>(emulator, `/deliveries?event_id=${eventId}`)).deliveries[0]!;
    const emittedAt = Date.parse((await delivery()).attempts[0]?.timestamp ?? new Date().toISOString());
    // A sweep read the event's window, up to past its time, while the tenant still retried it.
    await until("a sweep past the event while it is pending", async () => {
      const checkpoint = (await sweepStatus(service)).streams[0]?.checkpoint;
      const state = await delivery();
      expect(state.status, "the delivery failed before any sweep read past it").toBe("pending");
      return checkpoint != null && Date.parse(checkpoint) > emittedAt + 1000;
    });
    expect(attempts, "the tenant's second attempt is the one held").toBe(2);
    releaseSecondAttempt();
    await until("the tenant gives up", async () => (await delivery()).status === "failed", 120_000);
    refusing = false;

    await sink.until((requests) => byEventId(requests).has(eventId), 60_000);
    expect(byEventId(sink.requests).get(eventId)).toEqual(["reconcile"]);
    expect(proxy.counts.injected["503"]).toBe(4);
  }, 300_000);
});
