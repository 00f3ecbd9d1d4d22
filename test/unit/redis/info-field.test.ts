import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { infoField } from "../../../src/redis/info-field.js";
import { createRedis, untilReady } from "../../../src/redis/redis-connection.js";

const redis = createRedis(inject("redisUrl"), "client");
beforeAll(() => untilReady(redis));
afterAll(() => redis.disconnect());

describe("infoField (a real Redis INFO reply)", () => {
  it("when a field is read, then it is the whole value of that key, without the line's CR", async () => {
    const server = await redis.info("server");
    expect(server).toContain("\r\n");
    expect(infoField(server, "redis_version")).toMatch(/^\d+\.\d+\.\d+$/);
    expect(Number(infoField(server, "process_id"))).toBeGreaterThan(0);
    // used_memory is followed by used_memory_human, _rss, _peak...: only the exact key counts.
    const memory = await redis.info("memory");
    expect(infoField(memory, "used_memory")).toMatch(/^\d+$/);
    expect(infoField(memory, "used_memory_human")).toMatch(/^[\d.]+[KMGB]?$/);
  });

  it("when the server does not report a field, then it is undefined", () => {
    expect(infoField("# Server\r\nredis_version:7.2.4\r\n", "process_id")).toBeUndefined();
    expect(infoField("# Server\r\nredis_version:7.2.4\r\n", "redis")).toBeUndefined();
  });
});
