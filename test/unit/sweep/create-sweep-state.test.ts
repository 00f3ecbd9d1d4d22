import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createRedis, untilReady } from "../../../src/redis/redis-connection.js";
import { createSweepState } from "../../../src/sweep/create-sweep-state.js";

const redis = createRedis(inject("redisUrl"), "client");
beforeAll(() => untilReady(redis));
afterAll(() => redis.disconnect());

const stream = "est_aD5AUDqZbHFcMoEx2LxAk9";

describe("createSweepState (real Redis)", () => {
  it("when two processes ask for the lease, then one sweeps; the other may not move a checkpoint, and none sweeps again before the interval", async () => {
    const state = createSweepState(redis, `test-${randomUUID()}`);
    expect(await state.acquire("a", 5000, 60_000)).toBe(true);
    expect(await state.acquire("b", 5000, 0)).toBe(false);
    expect(await state.advance("b", stream, 1_000_000)).toBe(false);
    expect(await state.checkpoint(stream)).toBeUndefined();
    expect(await state.advance("a", stream, 2_000_000)).toBe(true);
    // A late write of an older window never moves the checkpoint back.
    expect(await state.advance("a", stream, 1_000_000)).toBe(true);
    expect(await state.checkpoint(stream)).toBe(2_000_000);
    expect(await state.renew("b", 5000)).toBe(false);
    expect(await state.renew("a", 5000)).toBe(true);
    await state.release("a");
    // Released, but the interval since "a" started has not passed.
    expect(await state.acquire("b", 5000, 60_000)).toBe(false);
  });

  it("when outcomes are noted, then each failed delivery is found once, and unrecovered ones leave the count when recovered", async () => {
    const state = createSweepState(redis, `test-${randomUUID()}`);
    const now = Date.now();
    expect(await state.noteOutcomes(stream, { recovered: ["e1", "e2"], received: [], unrecovered: ["e3", "e4"] }, now)).toBe(4);
    // Read again in the overlap: e1, e2 are already here; e3 still lacks a payload; e4 recovers now.
    expect(await state.noteOutcomes(stream, { recovered: ["e4"], received: ["e1", "e2"], unrecovered: ["e3"], reasons: { e3: "no_payload" } }, now)).toBe(0);
    await state.noteRun(stream, now, "boom");
    expect(await state.describe(3_600_000, now)).toEqual([
      // No checkpoint yet: the lag counts from the start of the first run's lookback.
      { streamId: stream, checkpoint: null, lastRunAt: new Date(now).toISOString(), lastError: "boom", found: 4, recovered: 3, unrecovered: 1, unrecoveredSample: [{ eventId: "e3", reason: "no_payload" }], lagSeconds: 3600 },
    ]);
    // Beyond the lookback, an unrecovered delivery is no longer counted.
    expect((await state.describe(1000, now + 5000))[0]!.unrecovered).toBe(0);
    // A stream no longer swept is forgotten: no lag, no unrecovered figure left to alert on.
    await state.retain([]);
    expect(await state.describe(3_600_000, now)).toEqual([]);
  });
});
