import { ConfigError } from "../config/config.js";
import { infoField } from "./info-field.js";
import type { RedisClient } from "./redis-connection.js";

/**
 * BullMQ 6 is "fully compatible with Redis 6.2.0 or newer" (docs.bullmq.io, Redis
 * compatibility; its queues refuse anything before 5.0 and warn before 6.2). Our own
 * scripts need nothing newer (event-ledger.ts avoids `EXPIRE ... NX`, a Redis 7 option).
 */
export const minimumRedisVersion = "6.2.0";

/** What is wrong with the server INFO reports, in words naming what to change; undefined when it is new enough. */
export function redisVersionProblem(info: string): string | undefined {
  const version = infoField(info, "redis_version")?.trim();
  // A server that reports no version (some managed proxies): nothing to check against.
  if (!version) return undefined;
  const [major = 0, minor = 0, patch = 0] = version.split(".").map((part) => Number.parseInt(part, 10) || 0);
  const [wantMajor, wantMinor, wantPatch] = minimumRedisVersion.split(".").map(Number) as [number, number, number];
  const older = major !== wantMajor ? major < wantMajor : minor !== wantMinor ? minor < wantMinor : patch < wantPatch;
  return older ? `Redis ${version} at REDIS_URL is too old: Streamkeeper needs Redis ${minimumRedisVersion} or newer; upgrade it or point REDIS_URL at a newer one` : undefined;
}

/** Throws a ConfigError (exit 2) when the Redis behind `redis` is older than the minimum. */
export async function checkRedisVersion(redis: RedisClient): Promise<void> {
  const problem = redisVersionProblem(await redis.info("server"));
  if (problem) throw new ConfigError([problem]);
}
