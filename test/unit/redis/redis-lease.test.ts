import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createRedis, untilReady } from "../../../src/redis/redis-connection.js";
import { createRedisLease } from "../../../src/redis/redis-lease.js";

const redis = createRedis(inject("redisUrl"), "client");
beforeAll(() => untilReady(redis));
afterAll(() => redis.disconnect());

describe("createRedisLease (real Redis)", () => {
  it("when one owner holds the lease, then another gets the time left and can neither renew nor release it", async () => {
    const lease = createRedisLease(redis, `test-${randomUUID()}:lease`);
    expect(await lease.acquire("a", 10_000)).toBe(0);
    const left = await lease.acquire("b", 10_000);
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThanOrEqual(10_000);
    // Not re-entrant either: a holder asking again is told it is held.
    expect(await lease.acquire("a", 10_000)).toBeGreaterThan(0);
    expect(await lease.renew("b", 10_000)).toBe(false);
    expect(await lease.release("b")).toBe(false);
    expect(await lease.acquire("b", 10_000)).toBeGreaterThan(0);
    expect(await lease.renew("a", 20_000)).toBe(true);
    expect(await lease.acquire("b", 10_000)).toBeGreaterThan(10_000);
    expect(await lease.release("a")).toBe(true);
    expect(await lease.acquire("b", 10_000)).toBe(0);
  });

  it("when a holder stalled past its lease and another took it, then the late holder's release and renew leave the new lease alone", async () => {
    const key = `test-${randomUUID()}:lease`;
    const lease = createRedisLease(redis, key);
    expect(await lease.acquire("stalled", 30)).toBe(0);
    const deadline = Date.now() + 10_000;
    while ((await lease.acquire("next", 10_000)) > 0) {
      if (Date.now() > deadline) throw new Error("the 30 ms lease never expired");
      await new Promise((ok) => setTimeout(ok, 10));
    }
    expect(await lease.renew("stalled", 10_000)).toBe(false);
    expect(await lease.release("stalled")).toBe(false);
    expect(await redis.get(key)).toBe("next");
  });
});
