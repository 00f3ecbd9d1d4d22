import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createCallPacer } from "../../../src/pace/create-call-pacer.js";
import type { PaceEvidence, PaceVerdict } from "../../../src/pace/read-pace-evidence.js";
import { createRedis, untilReady } from "../../../src/redis/redis-connection.js";

const redis = createRedis(inject("redisUrl"), "client");
beforeAll(() => untilReady(redis));
afterAll(() => redis.disconnect());

const evidence = (verdict: PaceVerdict, ceiling: number): PaceEvidence => ({ verdict, ceiling: { perSecond: ceiling, limit: "bucket" }, reason: verdict, holdMs: 0 });

describe("createCallPacer (real Redis)", () => {
  it("when two pacers share a key, then their calls together keep the rate", async () => {
    const key = `test-${randomUUID()}:pace`;
    const pacers = [createCallPacer(redis, key, { initialPerSecond: 100 }), createCallPacer(redis, key, { initialPerSecond: 100 })];
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
    const pacer = createCallPacer(redis, `test-${randomUUID()}:pace`, { initialPerSecond: 1000 });
    // Timed from before the hold is set, so the bound holds however late its reply comes
    // back (timed from after it, a 20 ms late reply would look like a short hold).
    const started = performance.now();
    await pacer.holdFor(150);
    await pacer.take();
    expect(performance.now() - started).toBeGreaterThanOrEqual(145);
  });

  it("when one process is told to cut the pace, then every process paces at the cut pace", async () => {
    const key = `test-${randomUUID()}:pace`;
    const learner = createCallPacer(redis, key, { initialPerSecond: 20 });
    const other = createCallPacer(redis, key, { initialPerSecond: 1000 });
    // A 429 halves the shared pace: 20/s becomes 10/s.
    expect(await learner.note(evidence("refused", 50))).toEqual({ perSecond: 10, step: "cut" });
    const started = performance.now();
    for (let call = 0; call < 6; call++) await other.take();
    // 6 slots 100 ms apart, though `other` itself started at 1000/s.
    expect(performance.now() - started).toBeGreaterThanOrEqual(450);
  });

  it("when the tenant keeps showing room, then the pace grows toward the ceiling and stops there", async () => {
    const pacer = createCallPacer(redis, `test-${randomUUID()}:pace`, { initialPerSecond: 5 });
    const paces: number[] = [];
    // Additive increase, half the ceiling a second: 5/s to 40/s in under two seconds of answers.
    await expect
      .poll(async () => (paces.push((await pacer.note(evidence("room", 40))).perSecond), paces.at(-1)), { interval: 20, timeout: 10_000 })
      .toBe(40);
    for (let answer = 0; answer < 5; answer++) paces.push((await pacer.note(evidence("room", 40))).perSecond);
    // Never down, never above the ceiling, and in more than one step.
    expect(paces).toEqual([...paces].sort((a, b) => a - b));
    expect(new Set(paces).size).toBeGreaterThan(2);
    expect(paces.at(-1)).toBe(40);
    expect(Math.max(...paces)).toBe(40);
  });

  it("when a lower limit shows up, then the pace drops to it at once", async () => {
    const pacer = createCallPacer(redis, `test-${randomUUID()}:pace`, { initialPerSecond: 50 });
    expect((await pacer.note(evidence("room", 8))).perSecond).toBe(8);
  });

  it("when many answers in flight show the same shortage, then the pace is cut once, not once per answer", async () => {
    const pacer = createCallPacer(redis, `test-${randomUUID()}:pace`, { initialPerSecond: 40 });
    const steps = await Promise.all(Array.from({ length: 10 }, () => pacer.note(evidence("short", 40))));
    expect(steps.filter((step) => step.step === "cut")).toHaveLength(1);
    expect(pacer.ratePerSecond()).toBe(32);
  });

  it("when the cap is below the start pace, then it starts at the cap", async () => {
    const capped = createCallPacer(redis, `test-${randomUUID()}:pace`, { capPerSecond: 2 });
    expect(capped.ratePerSecond()).toBe(2);
  });

  it("when many callers wait at a slow pace, then no slot is reserved more than a second ahead, so a faster pace applies to them", async () => {
    const key = `test-${randomUUID()}:pace`;
    const pacer = createCallPacer(redis, key, { initialPerSecond: 5 });
    const calls = Array.from({ length: 30 }, () => pacer.take());
    // 30 callers at 200 ms apart: before, they reserved slots 6 s ahead, kept after the pace rose.
    await expect.poll(async () => Number(await redis.get(`${key}:next`))).toBeGreaterThan(0);
    const [seconds, micros] = await redis.time();
    const aheadMs = Number(await redis.get(`${key}:next`)) - (Number(seconds) * 1000 + Math.floor(Number(micros) / 1000));
    expect(aheadMs).toBeLessThanOrEqual(1000 + 200);
    await expect.poll(async () => (await pacer.note(evidence("room", 1000))).perSecond, { interval: 50, timeout: 10_000 }).toBeGreaterThan(100);
    await Promise.all(calls);
  });
});
