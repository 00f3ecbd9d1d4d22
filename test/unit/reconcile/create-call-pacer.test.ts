import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createCallPacer } from "../../../src/reconcile/create-call-pacer.js";
import { createRedis, untilReady } from "../../../src/queue/redis-connection.js";

const redis = createRedis(inject("redisUrl"), "client");
beforeAll(() => untilReady(redis));
afterAll(() => redis.disconnect());

describe("createCallPacer (real Redis)", () => {
  it("when two pacers share a key, then their calls together keep the rate", async () => {
    const key = `test-${randomUUID()}:pace`;
    const pacers = [createCallPacer(redis, key, { share: 1, initialPerSecond: 100 }), createCallPacer(redis, key, { share: 1, initialPerSecond: 100 })];
    const started = performance.now();
    const times: number[] = [];
    await Promise.all(
      Array.from({ length: 30 }, async (_, index) => {
        await pacers[index % 2]!.take();
        times.push(performance.now() - started);
      }),
    );
    // 30 slots 10 ms apart, shared by both pacers: the last cannot start before ~290 ms.
    // (Only this bound is safe to check: a busy machine wakes sleepers late, never early,
    // so the times a caller observes may bunch even though the reserved slots do not.)
    expect(Math.max(...times)).toBeGreaterThanOrEqual(270);
  });

  it("when calls are held (a 429), then the next call waits the hold", async () => {
    const pacer = createCallPacer(redis, `test-${randomUUID()}:pace`, { share: 1, initialPerSecond: 1000 });
    // Timed from before the hold is set, so the bound holds however late its reply comes
    // back (timed from after it, a 20 ms late reply would look like a short hold).
    const started = performance.now();
    await pacer.holdFor(150);
    await pacer.take();
    expect(performance.now() - started).toBeGreaterThanOrEqual(145);
  });

  it("when one process learns the tenant's allowance, then every process paces at the share of it, under the cap", async () => {
    const key = `test-${randomUUID()}:pace`;
    const learner = createCallPacer(redis, key, { share: 0.5, initialPerSecond: 1000 });
    const other = createCallPacer(redis, key, { share: 0.5, initialPerSecond: 1000 });
    await learner.noteAllowance(20);
    expect(learner.ratePerSecond()).toBe(10);
    const started = performance.now();
    for (let call = 0; call < 6; call++) await other.take();
    // 6 slots 100 ms apart (half of 20/s), though `other` itself started at 1000/s.
    expect(performance.now() - started).toBeGreaterThanOrEqual(450);

    const capped = createCallPacer(redis, `test-${randomUUID()}:pace`, { share: 0.5, capPerSecond: 4 });
    await capped.noteAllowance(1000);
    expect(capped.ratePerSecond()).toBe(4);
  });

  it("when many callers wait at a slow pace, then no slot is reserved more than a second ahead, so a faster pace applies to them", async () => {
    const key = `test-${randomUUID()}:pace`;
    const pacer = createCallPacer(redis, key, { share: 1, initialPerSecond: 5 });
    const calls = Array.from({ length: 30 }, () => pacer.take());
    // 30 callers at 200 ms apart: before, they reserved slots 6 s ahead, kept after the pace rose.
    await expect.poll(async () => Number(await redis.get(`${key}:next`))).toBeGreaterThan(0);
    const [seconds, micros] = await redis.time();
    const aheadMs = Number(await redis.get(`${key}:next`)) - (Number(seconds) * 1000 + Math.floor(Number(micros) / 1000));
    expect(aheadMs).toBeLessThanOrEqual(1000 + 200);
    await pacer.noteAllowance(1000);
    await Promise.all(calls);
  });
});
