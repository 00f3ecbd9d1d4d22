import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createFreshnessRecorder } from "../../src/freshness/create-freshness-recorder.js";
import { minuteKeyTtlMs, freshnessMinuteKey } from "../../src/freshness/freshness-keys.js";
import { createLastHourReader } from "../../src/freshness/read-last-hour.js";
import { startWaitingSampler } from "../../src/freshness/create-waiting-sampler.js";
import { capturedLogger } from "../helpers/captured-logger.js";

describe("freshness: the operator view's last hour per route, from the delivery path and the waiting sampler", () => {
  let redis: Redis;
  beforeAll(() => {
    redis = new Redis(inject("redisUrl"), { maxRetriesPerRequest: null });
  });
  afterAll(() => redis.quit());

  it("when deliveries are recorded in two minutes of the hour, then each minute shows its count and p99 there, the other minutes zero and no p99, oldest first", async () => {
    const prefix = `test-${randomUUID()}`;
    const recorder = createFreshnessRecorder({ redis, queuePrefix: prefix, logger: capturedLogger().logger, flushEveryMs: 60_000 });
    const now = Date.now();
    const route = { name: "crm" };
    // 40 minutes ago: 3 live deliveries 2 s after their time; now: 2, one a replay (counted, not in the freshness).
    for (let i = 0; i < 3; i++) recorder.delivered(route, "webhook", "live", new Date(now - 40 * 60_000 - 2000).toISOString(), now - 40 * 60_000);
    recorder.delivered(route, "webhook", "live", new Date(now - 500).toISOString(), now);
    recorder.delivered(route, "replay", "late", new Date(now - 86_400_000).toISOString(), now);
    await recorder.close();

    const readLastHour = createLastHourReader(redis, prefix);
    const hour = (await readLastHour(["crm", "billing"], now)).get("crm")!;
    expect(hour.minutes).toHaveLength(60);
    expect(Date.parse(hour.minutes.at(-1)!)).toBe(Math.floor(now / 60_000) * 60_000);
    expect(Date.parse(hour.minutes[0]!)).toBe((Math.floor(now / 60_000) - 59) * 60_000);
    expect(hour.delivered.at(-1)).toBe(2);
    expect(hour.delivered.at(-41)).toBe(3);
    expect(hour.delivered.reduce((sum, n) => sum + n, 0)).toBe(5);
    // Within the sketch's 10%.
    expect(hour.p99.at(-41)).toBeGreaterThan(1.8);
    expect(hour.p99.at(-41)).toBeLessThan(2.2);
    expect(hour.p99.at(-1)).toBeLessThan(0.6);
    expect(hour.p99.filter((p99) => p99 !== null)).toHaveLength(2);
    // The minute keys last past the hour the charts read.
    expect(await redis.pttl(freshnessMinuteKey(prefix, Math.floor((now - 40 * 60_000) / 60_000)))).toBeGreaterThan(40 * 60_000);
    expect(minuteKeyTtlMs).toBeGreaterThan(60 * 60_000);
    // Read again a minute later: the settled minutes come from what the first read kept, the same figures.
    await redis.del(freshnessMinuteKey(prefix, Math.floor((now - 40 * 60_000) / 60_000)));
    expect((await readLastHour(["crm"], now + 60_000)).get("crm")!.delivered.at(-42)).toBe(3);
  });

  it("when the sampler runs, then the current minute holds each route's waiting events, and minutes with no sample none", async () => {
    const prefix = `test-${randomUUID()}`;
    let waiting = 7;
    const readLastHour = createLastHourReader(redis, prefix);
    const sampler = startWaitingSampler({ redis, queuePrefix: prefix, logger: capturedLogger().logger, read: async () => new Map([["crm", waiting], ["billing", 0]]), everyMs: 50 });
    try {
      await expect.poll(async () => (await readLastHour(["crm", "billing"], Date.now())).get("crm")!.waiting.all.at(-1)).toBe(7);
      waiting = 12;
      await expect.poll(async () => (await readLastHour(["crm"], Date.now())).get("crm")!.waiting.all.at(-1)).toBe(12);
    } finally {
      await sampler.close();
    }
    const hour = await readLastHour(["crm", "billing"], Date.now());
    expect(hour.get("billing")!.waiting.all.at(-1)).toBe(0);
    expect(hour.get("crm")!.waiting.all.slice(0, 58).every((sample) => sample === null)).toBe(true);
  });
});
