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
import { changeEventsApi, emitMany, emitWithOffsets, keptOffset } from "./pull-test-kit.js";

/**
 * The contract's poison rule for an event the store refuses for good (too deep to write, a
 * value it cannot take): kept aside, the offset moves past it, the events after it arrive.
 * A refusal that may pass (Redis away) is not that: reading stops and resumes from the kept
 * offset. A real emulator and a real Redis; the store is ours, refusing what the test says.
 */
describe("pull: an event the store refuses, an offset older than the dedupe window, a start not yet kept", () => {
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
    const { ids, offsets } = await emitWithOffsets(emulator, 4);
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
    const puller = createPuller({ state, store, tenant, apiBaseUrl: emulator.apiBaseUrl, start: { kind: "ago", ms: 3_600_000 }, overlapMs: 0, maxMessageBytes: 1_048_576, dedupeTtlMs: 7 * 86_400_000, failoverMs: 2000, backoffBaseMs: 10, backoffMaxMs: 50, logger: logs.logger });
    try {
      // Stored a few at once (inFlight), so in any order; the flaky one after its retry.
      await until("every storable event stored", () => stored.includes(last) && stored.includes(flaky), { withinMs: 30_000, detail: () => JSON.stringify({ stored, flakyTries, logs: logs.lines.map((line) => line.msg) }) });
      expect(stored.sort()).toEqual([first, flaky, last].sort());
      // Kept once its event is stored, the offset ends at the last event's, past the refused one's.
      await expect.poll(() => keptOffset(prefix), { timeout: 30_000 }).toBe(offsets[3]);
      const [kept] = await state.poison();
      expect(kept).toMatchObject({ reason: "RangeError: Maximum call stack size exceeded" });
      expect(kept!.raw).toContain(refused);
      expect(flakyTries).toBe(2);
      expect(logs.lines.some((line) => String(line.msg).startsWith("pull: an event that cannot be stored was kept aside"))).toBe(true);
    } finally {
      await puller.close();
    }
  });

  it("when a process restarts (or fails over) before any offset is kept, then it reads from the start the first attempt fixed, not from a later now: an event emitted in between arrives", async () => {
    const statePrefix = `test-${randomUUID()}`;
    const state = createPullState(redis, statePrefix);
    const stored: string[] = [];
    const store: EventStore = { store: async (event: CloudEvent) => (stored.push(event.id), { status: "stored", routes: ["default"] }) };
    const tenant = createTenantClient({ apiBaseUrl: emulator.apiBaseUrl, tokenUrl: emulator.tokenUrl, audience: emulator.audience, clientId: "emulator-client", clientSecret: "emulator-secret" });
    try {
      // The first attempt (PULL_START=now) fixed its start, then the process died before keeping an offset.
      const fixed = await state.fixStart(new Date(Date.now() - 1000));
      expect(await state.fixStart(new Date())).toEqual(fixed);
      const [between] = await emitMany(emulator, 1);
      const puller = createPuller({ state, store, tenant, apiBaseUrl: emulator.apiBaseUrl, start: { kind: "now" }, overlapMs: 0, maxMessageBytes: 1_048_576, dedupeTtlMs: 7 * 86_400_000, failoverMs: 2000, logger: capturedLogger("info").logger });
      try {
        await until("the event emitted between the two starts stored", () => stored.includes(between!));
      } finally {
        await puller.close();
      }
    } finally {
      await redis.del(...(["lease", "position", "status", "poison"] as const).map((name) => pullKey(statePrefix, name)));
    }
  });

  it("when the kept offset expired (410) and was kept longer ago than DEDUPE_TTL_SECONDS, then reading resumes from the start of the dedupe window, not before it (those ids are forgotten: a re-read would deliver them twice), and says so at error", async () => {
    const statePrefix = `test-${randomUUID()}`;
    const state = createPullState(redis, statePrefix);
    const calls = new Map<string, number>();
    const store: EventStore = {
      async store(event: CloudEvent) {
        calls.set(event.id, (calls.get(event.id) ?? 0) + 1);
        return { status: "stored", routes: ["default"] };
      },
    };
    const tenant = createTenantClient({ apiBaseUrl: emulator.apiBaseUrl, tokenUrl: emulator.tokenUrl, audience: emulator.audience, clientId: "emulator-client", clientSecret: "emulator-secret" });
    const dedupeTtlMs = 1000;
    const pull = (logger = capturedLogger("info")) =>
      createPuller({ state, store, tenant, apiBaseUrl: emulator.apiBaseUrl, start: { kind: "now" }, overlapMs: 0, maxMessageBytes: 1_048_576, dedupeTtlMs, failoverMs: 2000, backoffBaseMs: 10, backoffMaxMs: 50, logger: logger.logger });
    try {
      const first = pull();
      await until("connected", async () => (await state.describe(true)).state === "connected");
      const early = await emitWithOffsets(emulator, 3);
      await until("the early events stored", () => early.ids.every((id) => calls.has(id)));
      await first.close();
      // The tenant drops its log past the kept offset, and the worker stays away longer than the dedupe window.
      // As if the worker had kept only the first event's offset (a crash before the others'),
      // and the tenant then dropped its log through the second: the third is still in the log.
      const firstTime = (await state.position()).lastEventAt;
      await redis.hset(pullKey(statePrefix, "position"), "offset", early.offsets[0]!, "lastEventAt", firstTime ?? new Date().toISOString());
      await changeEventsApi(emulator, { expire_through: early.offsets[1]! });
      const away = Date.now();
      await until("the dedupe window has passed since", () => Date.now() - away > 2 * dedupeTtlMs, { everyMs: 50 });
      const logs = capturedLogger("info");
      const second = pull(logs);
      try {
        // Emitted once the resume point is fixed (now less the 1 s window, when the 410 came):
        // before it, a slow start could leave them outside that second.
        await until("the resume said", () => logs.lines.some((line) => String(line.msg).startsWith("pull: the kept offset can no longer be read")));
        const late = await emitMany(emulator, 2);
        await until("the late events stored", () => late.every((id) => calls.has(id)));
        // Read back from the last stored event's time, the third would be stored again: its id forgotten, delivered twice.
        expect(early.ids.map((id) => calls.get(id))).toEqual([1, 1, 1]);
        const said = logs.lines.filter((line) => String(line.msg).startsWith("pull: the kept offset is older than DEDUPE_TTL_SECONDS"));
        expect(said.map((line) => line.level)).toEqual([50]);
      } finally {
        await second.close();
      }
    } finally {
      await redis.del(...(["lease", "position", "status", "poison"] as const).map((name) => pullKey(statePrefix, name)));
    }
  });
});
