import { describe, expect, inject, it } from "vitest";
import { createRedis, untilReady } from "../../src/redis/redis-connection.js";
import { startRedisCluster, type RedisClusterHandle } from "../helpers/redis-cluster.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";
import { useCleanup } from "../helpers/cleanup.js";

async function gauges(service: TestService): Promise<Map<string, number>> {
  const text = await (await fetch(`${service.adminUrl}/metrics`)).text();
  const wanted = /^(streamkeeper_redis_memory_(used|max)_bytes|streamkeeper_route_circuit_open\{[^}]*\}) (\S+)$/;
  return new Map(text.split("\n").flatMap((line) => {
    const match = wanted.exec(line);
    return match ? [[match[1]!, Number(match[3])] as const] : [];
  }));
}

/** Redis memory and the route circuits are read at scrape time, on one Redis and on a Cluster alike. */
describe("metrics: Redis memory and route circuits at scrape time", () => {
  const cleanup = useCleanup("all");

  it("when scraped against one Redis, then used memory is Redis's, max memory is its maxmemory (0: none), and each route's circuit reads 0", async () => {
    const service = await startTestService();
    cleanup.push(() => service.close());
    const redis = createRedis(inject("redisUrl"), "client");
    cleanup.push(async () => redis.disconnect());
    await untilReady(redis);
    const [, maxmemory] = (await redis.config("GET", "maxmemory")) as [string, string];

    const values = await gauges(service);
    expect(values.get("streamkeeper_redis_memory_used_bytes")).toBeGreaterThan(100_000);
    expect(values.get("streamkeeper_redis_memory_max_bytes")).toBe(Number(maxmemory));
    expect(values.get('streamkeeper_route_circuit_open{route="default"}')).toBe(0);
  });

  it("when scraped against a Redis Cluster, then the same gauges are there", async () => {
    const cluster: RedisClusterHandle = await startRedisCluster(3);
    cleanup.push(() => cluster.stop());
    const service = await startTestService({ REDIS_URL: cluster.url });
    cleanup.push(() => service.close());

    const values = await gauges(service);
    expect(values.get("streamkeeper_redis_memory_used_bytes")).toBeGreaterThan(100_000);
    expect(values.get("streamkeeper_redis_memory_max_bytes")).toBe(0);
    expect(values.get('streamkeeper_route_circuit_open{route="default"}')).toBe(0);
  }, 120_000);
});
