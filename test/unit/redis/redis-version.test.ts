import { describe, expect, it } from "vitest";
import { minimumRedisVersion, redisVersionProblem } from "../../../src/redis/redis-version.js";

const info = (version: string) => `# Server\r\nredis_version:${version}\r\nredis_mode:standalone\r\n`;

describe("redis version check", () => {
  it("when Redis is older than BullMQ 6's minimum, then the problem names the minimum and REDIS_URL", () => {
    for (const version of ["6.0.16", "5.0.14", "6.1.9"]) {
      const problem = redisVersionProblem(info(version));
      expect(problem).toContain(`Redis ${version}`);
      expect(problem).toContain(minimumRedisVersion);
      expect(problem).toContain("REDIS_URL");
    }
  });

  it("when Redis is the minimum or newer (or Valkey, which reports a Redis version), then there is no problem", () => {
    for (const version of ["6.2.0", "6.2.14", "7.0.15", "7.2.4", "8.0.0", "10.1.2"]) expect(redisVersionProblem(info(version))).toBeUndefined();
  });
});
