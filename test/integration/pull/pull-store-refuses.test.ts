import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { CloudEvent } from "../../../src/events/cloud-event.js";
import { startEmulator, type Emulator } from "../../../src/emulator/start-emulator.js";
import { createPuller } from "../../../src/pull/create-puller.js";
import { createPullState, pullKey } from "../../../src/pull/pull-state.js";
import type { EventStore } from "../../../src/queue/event-store.js";
import { createRedis, untilReady } from "../../../src/redis/redis-connection.js";
import { createTenantClient } from "../../../src/tenant/create-tenant-client.js";
import { capturedLogger } from "../../helpers/captured-logger.js";
import { until } from "../../helpers/until.js";
import { emitWithOffsets } from "./pull-test-kit.js";

/**
 * The contract's poison rule for an event the store refuses for good (too deep to write, a
 * value it cannot take): kept aside, the offset moves past it, the events after it arrive.
 * A refusal that may pass (Redis away) is not that: reading stops and resumes from the kept
 * offset. A real emulator and a real Redis; the store is ours, refusing what the test says.
 */
describe("pull: an event the store refuses", () => {
  const redis = createRedis(inject("redisUrl"), "client");
  const prefix = `test-${randomUUID()}`;
  let emulator: Emulator;
  beforeAll(async () => {
    await untilReady(redis);
    emulator = await startEmulator({ timeScale: 0.01 });
  });
  afterAll(async () => {
    await redis.del(...(["lease", "position", "status", "poison"] as const).map((name) => pullKey(prefix, name)));
    redis.disconnect();
    await emulator?.close();
  });

  it("when the store refuses one event for a reason of the event itself, then it is kept aside with its reason, the offset moves past it and the next events are stored; a Redis fault is retried instead", async () => {
    const { ids } = await emitWithOffsets(emulator, 4);
    const [first, refused, flaky, last] = ids as [string, string, string, string];
    const stored: string[] = [];
    let flakyTries = 0;
    const store: EventStore = {
      async store(event: CloudEvent) {
        if (event.id === refused) throw new RangeError("Maximum call stack size exceeded");
        // Redis away once: the message is read again from the kept offset, then stored.
        if (event.id === flaky && flakyTries++ === 0) throw new Error("Connection is closed.");
        if (!stored.includes(event.id)) stored.push(event.id);
        return { status: "stored", routes: ["default"] };
      },
    };
    const state = createPullState(redis, prefix);
    const tenant = createTenantClient({ apiBaseUrl: emulator.apiBaseUrl, tokenUrl: emulator.tokenUrl, audience: emulator.audience, clientId: "emulator-client", clientSecret: "emulator-secret" });
    const logs = capturedLogger("info");
    const puller = createPuller({ state, store, tenant, apiBaseUrl: emulator.apiBaseUrl, start: { kind: "ago", ms: 3_600_000 }, overlapMs: 0, failoverMs: 2000, backoffBaseMs: 10, backoffMaxMs: 50, logger: logs.logger });
    try {
      // Stored a few at once (inFlight), so in any order; the flaky one after its retry.
      await until("every storable event stored", () => stored.includes(last) && stored.includes(flaky), { withinMs: 30_000, detail: () => JSON.stringify({ stored, flakyTries, logs: logs.lines.map((line) => line.msg) }) });
      expect(stored.sort()).toEqual([first, flaky, last].sort());
      const [kept] = await state.poison();
      expect(kept).toMatchObject({ reason: "RangeError: Maximum call stack size exceeded" });
      expect(kept!.raw).toContain(refused);
      expect(flakyTries).toBe(2);
      expect(logs.lines.some((line) => String(line.msg).startsWith("pull: an event that cannot be stored was kept aside"))).toBe(true);
    } finally {
      await puller.close();
    }
  });
});
