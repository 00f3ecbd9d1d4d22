import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createRedis, untilReady } from "../../../src/redis/redis-connection.js";
import { createCallPacer } from "../../../src/pace/create-call-pacer.js";
import { pacedFetch } from "../../../src/pace/paced-fetch.js";

const redis = createRedis(inject("redisUrl"), "client");
beforeAll(() => untilReady(redis));
afterAll(() => redis.disconnect());

describe("pacedFetch (real Redis)", () => {
  it("when the tenant shows a bucket of 100 with room, then the shared pace grows to half of 100/s and not beyond", async () => {
    const pacer = createCallPacer(redis, `test-${randomUUID()}:pace`);
    const tenant = async () =>
      new Response("{}", { headers: { "X-RateLimit-Limit": "100", "X-RateLimit-Remaining": "99", "X-RateLimit-Reset": String(Math.ceil(Date.now() / 1000) + 1) } });
    const paces: number[] = [];
    const fetch = pacedFetch({ pacer, share: 0.5, apiBaseUrl: "http://127.0.0.1:1/api/v2", fetch: tenant, onPace: (step) => paces.push(step.perSecond) });
    await expect.poll(async () => (await fetch("http://127.0.0.1:1/api/v2/event-streams"), pacer.ratePerSecond()), { interval: 10, timeout: 20_000 }).toBe(50);
    expect(Math.max(...paces)).toBe(50);
  });

  it("when the tenant answers 429 with Retry-After, then every call is held and the pace is cut", async () => {
    const pacer = createCallPacer(redis, `test-${randomUUID()}:pace`, { initialPerSecond: 40 });
    const holds: number[] = [];
    const tenant = async () => new Response("{}", { status: 429, headers: { "Retry-After": "1", "X-RateLimit-Limit": "100", "X-RateLimit-Remaining": "0" } });
    const fetch = pacedFetch({ pacer, share: 0.5, apiBaseUrl: "http://127.0.0.1:1/api/v2", fetch: tenant, onHold: (ms) => holds.push(ms) });
    expect((await fetch("http://127.0.0.1:1/api/v2/event-streams")).status).toBe(429);
    expect(holds).toEqual([1000]);
    expect(pacer.ratePerSecond()).toBe(20);
  });

  it("when an answer comes from outside the API (the token endpoint), then it moves nothing", async () => {
    const pacer = createCallPacer(redis, `test-${randomUUID()}:pace`, { initialPerSecond: 40 });
    const tenant = async () => new Response("{}", { status: 429, headers: { "Retry-After": "5" } });
    const fetch = pacedFetch({ pacer, share: 0.5, apiBaseUrl: "http://127.0.0.1:1/api/v2", fetch: tenant });
    await fetch("http://127.0.0.1:1/oauth/token");
    expect(pacer.ratePerSecond()).toBe(40);
  });
});
