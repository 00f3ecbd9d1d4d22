import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createRedis, untilReady } from "../../../src/queue/redis-connection.js";
import { createCallPacer } from "../../../src/reconcile/create-call-pacer.js";
import { holdAfter, pacedFetch } from "../../../src/reconcile/paced-fetch.js";

const redis = createRedis(inject("redisUrl"), "client");
beforeAll(() => untilReady(redis));
afterAll(() => redis.disconnect());

const now = Date.parse("2025-09-08T06:35:17.000Z");
const answer = (status: number, headers: Record<string, string>) => ({ status, headers: new Headers(headers) });

describe("holdAfter", () => {
  it("when the bucket has room, then calls go on", () => {
    expect(holdAfter(answer(200, { "X-RateLimit-Limit": "50", "X-RateLimit-Remaining": "12", "X-RateLimit-Reset": String(now / 1000 + 1) }), now)).toBe(0);
  });

  it("when the bucket is empty, then calls hold until X-RateLimit-Reset (UNIX seconds)", () => {
    expect(holdAfter(answer(200, { "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": String(now / 1000 + 2) }), now)).toBe(2000);
  });

  it("when the tenant answers 429, then Retry-After wins over the reset time", () => {
    expect(holdAfter(answer(429, { "Retry-After": "3", "X-RateLimit-Reset": String(now / 1000 + 9) }), now)).toBe(3000);
    expect(holdAfter(answer(429, { "X-RateLimit-Reset": String(now / 1000 + 9) }), now)).toBe(9000);
  });

  it("when a 429 has no hint at all, then calls hold a second", () => {
    expect(holdAfter(answer(429, {}), now)).toBe(1000);
  });

  it("when others drained the bucket below their part, then we wait for it to refill to that part", () => {
    const headers = (remaining: number) => ({ "X-RateLimit-Limit": "50", "X-RateLimit-Remaining": String(remaining), "X-RateLimit-Reset": String(now / 1000 + 1) });
    // share 0.5 of a 50 bucket: the others keep 25; at 20 left, 5 tokens at 50/s is 100 ms.
    expect(holdAfter(answer(200, headers(20)), now, 0.5)).toBe(100);
    expect(holdAfter(answer(200, headers(30)), now, 0.5)).toBe(0);
    expect(holdAfter(answer(200, headers(20)), now, 1)).toBe(0);
  });
});

describe("pacedFetch (real Redis)", () => {
  it("when the tenant shows a bucket of 100 (X-RateLimit-Limit is its size, not a rate), then the pace stays at the conservative start, not share of 100/s", async () => {
    const pacer = createCallPacer(redis, `test-${randomUUID()}:pace`, { share: 0.5 });
    const reset = String(Math.ceil(Date.now() / 1000) + 1);
    const tenant = async () => new Response("{}", { headers: { "X-RateLimit-Limit": "100", "X-RateLimit-Remaining": "99", "X-RateLimit-Reset": reset } });
    const fetch = pacedFetch({ pacer, share: 0.5, apiBaseUrl: "http://127.0.0.1:1/api/v2", fetch: tenant });
    await fetch("http://127.0.0.1:1/api/v2/event-streams");
    expect(pacer.ratePerSecond()).toBeLessThanOrEqual(5);
  });
});
