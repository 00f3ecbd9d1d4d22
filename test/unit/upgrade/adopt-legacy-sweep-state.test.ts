import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { bullPrefix, sweepKey } from "../../../src/queue/queue-names.js";
import { createRedis, untilReady } from "../../../src/redis/redis-connection.js";
import { adoptLegacySweepState } from "../../../src/upgrade/adopt-legacy-sweep-state.js";
import { createSweepState } from "../../../src/sweep/create-sweep-state.js";

const redis = createRedis(inject("redisUrl"), "client");
beforeAll(() => untilReady(redis));
afterAll(() => redis.disconnect());

const [moved, ahead] = ["est_aD5AUDqZbHFcMoEx2LxAk9", "est_bD5AUDqZbHFcMoEx2LxAk9"];

describe("adoptLegacySweepState (real Redis)", () => {
  it("when an earlier release left sweep state under the shared tag, then its checkpoints, figures and unrecovered ids move under the sweep's tag, never over newer ones", async () => {
    const prefix = `test-${randomUUID()}`;
    const now = Date.now();
    // What an earlier release wrote (create-sweep-state.ts under `{prefix}:sweep:`).
    const old = (name: string) => `${bullPrefix(prefix)}:sweep:${name}`;
    await redis.sadd(old("streams"), moved, ahead);
    await redis.hset(old(`stream:${moved}`), "checkpoint", now - 60_000, "found", 3, "recovered", 2, "lastRunAt", now - 30_000, "lastError", "");
    await redis.zadd(old(`unrecovered:${moved}`), now - 50_000, "evt_lacking");
    await redis.hset(old(`stream:${ahead}`), "checkpoint", now - 120_000);
    // A sweep of this release already went further on one stream.
    const state = createSweepState(redis, prefix);
    await redis.hset(sweepKey(prefix, `stream:${ahead}`), "checkpoint", now - 1000);

    expect(await adoptLegacySweepState(redis, prefix)).toBe(2);
    expect(await state.checkpoint(moved)).toBe(now - 60_000);
    expect(await state.checkpoint(ahead)).toBe(now - 1000);
    expect((await state.describe(3_600_000, now)).find((stream) => stream.streamId === moved)).toMatchObject({ found: 3, recovered: 2, unrecovered: 1 });
    expect(await redis.exists(old("streams"), old(`stream:${moved}`), old(`unrecovered:${moved}`), old(`stream:${ahead}`))).toBe(0);
    // Nothing left to move: a second start is a no-op.
    expect(await adoptLegacySweepState(redis, prefix)).toBe(0);
  });
});
