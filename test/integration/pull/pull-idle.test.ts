import { randomUUID } from "node:crypto";
import { describe, expect, inject, it } from "vitest";
import { startEmulator } from "../../../src/emulator/start-emulator.js";
import type { EventStore } from "../../../src/queue/event-store.js";
import { createPuller } from "../../../src/pull/create-puller.js";
import { createPullState, pullKey } from "../../../src/pull/pull-state.js";
import { createRedis, untilReady } from "../../../src/redis/redis-connection.js";
import { createTenantClient } from "../../../src/tenant/create-tenant-client.js";
import { capturedLogger } from "../../helpers/captured-logger.js";
import { useCleanup } from "../../helpers/cleanup.js";
import { until } from "../../helpers/until.js";
import { changeEventsApi, eventsApi } from "./pull-test-kit.js";

/** The pull's idle check (a connection silent this long is made again) against a quiet log. */
describe("pull: a connection that only its comments show alive", () => {
  const cleanup = useCleanup("each");

  it("when a quiet log sends only `: heartbeat` comments, then the connection is kept: none is dropped as idle", async () => {
    const emulator = await startEmulator({ eventsHeartbeatSeconds: 0.2 });
    cleanup.push(() => emulator.close());
    // No `offset-only` markers: on this log only the comments come, five a second.
    await changeEventsApi(emulator, { markers: false });
    const redis = createRedis(inject("redisUrl"), "client");
    cleanup.push(async () => void redis.disconnect());
    await untilReady(redis);
    const statePrefix = `test-${randomUUID()}`;
    cleanup.push(async () => void (await redis.del(...(["lease", "position", "status", "poison"] as const).map((name) => pullKey(statePrefix, name)))));
    const store: EventStore = { store: async () => ({ status: "stored", routes: [] }) };
    const tenant = createTenantClient({ apiBaseUrl: emulator.apiBaseUrl, tokenUrl: emulator.tokenUrl, audience: emulator.audience, clientId: "emulator-client", clientSecret: "emulator-secret" });
    const puller = createPuller({
      state: createPullState(redis, statePrefix),
      store,
      tenant,
      apiBaseUrl: emulator.apiBaseUrl,
      start: { kind: "now" },
      overlapMs: 0,
      maxMessageBytes: 1_048_576,
      dedupeTtlMs: 86_400_000,
      failoverMs: 2000,
      // Idle after 3 s without a message or a comment: only a stall of ~3 s could end it here.
      idleMs: 3000,
      logger: capturedLogger("info").logger,
    });
    cleanup.push(() => puller.close());
    await until("connected", async () => (await eventsApi(emulator)).open === 1);
    // Over two idle periods, with comments and no message: still the one connection.
    await new Promise((resolve) => setTimeout(resolve, 7000));
    expect((await eventsApi(emulator)).recent).toEqual([{ at: expect.any(Number), status: 0 }]);
  });
});
