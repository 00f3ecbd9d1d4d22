import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createRouteCircuit, type RouteCircuit } from "../../src/dispatch/route-circuit.js";
import { createLogger } from "../../src/logging/logger.js";
import { circuitKey } from "../../src/queue/queue-names.js";
import { createRedis } from "../../src/redis/redis-connection.js";

// Probes a second apart: far longer than six round trips, even on a loaded machine.
const settings = { failures: 3, probeMinMs: 1000, probeMaxMs: 4000 };

/**
 * The circuit's state lives in Redis: circuits built on separate connections (as in
 * separate worker processes) agree on it, and exactly one of them gets each probe.
 */
describe("route circuit shared through Redis", () => {
  const redis = createRedis(inject("redisUrl"), "worker");
  const other = createRedis(inject("redisUrl"), "worker");
  const holds: number[] = [];
  let key: string;
  let a: RouteCircuit;
  let b: RouteCircuit;

  beforeAll(() => {
    key = circuitKey(`test-${randomUUID()}`, "crm");
    const deps = { route: "crm", key, settings, hold: async (ms: number) => void holds.push(ms), logger: createLogger("silent") };
    a = createRouteCircuit({ ...deps, redis });
    b = createRouteCircuit({ ...deps, redis: other });
  });
  afterAll(() => {
    redis.disconnect();
    other.disconnect();
  });

  it("when two processes' failures add up to the threshold, then both hold their jobs, one probe at a time goes out, and an answer closes it for both", async () => {
    expect(await a.admit()).toBe("send");
    expect(await a.failed("send", "downstream answered 503")).toBe(false);
    expect(await b.failed("send", "downstream answered 503")).toBe(false);
    // The third failure in a row, from either process, opens it: that job goes back too.
    expect(await b.failed("send", "downstream answered 503")).toBe(true);
    expect(await a.admit()).toBe("hold");
    expect(await b.admit()).toBe("hold");
    expect(holds.every((ms) => ms > 0 && ms <= settings.probeMinMs)).toBe(true);

    // Once the probe is due, of many jobs asking at once exactly one probes.
    await waitForProbeTime(redis, key);
    const admissions = await Promise.all([a, b, a, b, a, b].map((circuit) => circuit.admit()));
    expect(admissions.filter((admission) => admission === "probe")).toHaveLength(1);
    expect(admissions.filter((admission) => admission === "hold")).toHaveLength(5);

    // A failed probe doubles the wait before the next one.
    expect(await a.failed("probe", "downstream answered 503")).toBe(true);
    expect(Number(await redis.hget(key, "probeMs"))).toBe(2 * settings.probeMinMs);

    await waitForProbeTime(redis, key);
    expect(await b.admit()).toBe("probe");
    b.answered();
    await expect.poll(() => redis.exists(key)).toBe(0);
    expect(await a.admit()).toBe("send");
    expect(await b.admit()).toBe("send");
  });
});

async function waitForProbeTime(redis: ReturnType<typeof createRedis>, key: string): Promise<void> {
  for (;;) {
    const [seconds = 0, micros = 0] = (await redis.time()).map(Number);
    const now = seconds * 1000 + Math.floor(micros / 1000);
    const next = Number(await redis.hget(key, "nextProbeAt"));
    if (now >= next) return;
    await new Promise((ok) => setTimeout(ok, next - now));
  }
}
