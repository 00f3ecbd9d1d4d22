import type { Config } from "../config.js";
import { closeRedis, createRedis, untilReady, type RedisClient } from "../queue/redis-connection.js";
import { runningEmbeddedRedis } from "../queue/resolve-redis.js";
import { readServiceConfigDocument } from "../queue/service-config-store.js";
import type { ServiceConfig } from "../service-config/service-config.js";
import { askService } from "./ask-service.js";

export type ServiceConfigResult =
  | { config: ServiceConfig; from: string }
  /** No service configuration could be read; `why` is one line saying what to start or set. */
  | { config: undefined; why: string };

/**
 * The running service's effective configuration (routes, tenant and sweep settings,
 * version), or undefined and why: what every command that acts on the service's behalf
 * follows instead of its own shell (issue 18). With `redis` (a command already connected),
 * the document the service wrote there at start; without, the service's GET /admin/config
 * when this shell has ADMIN_TOKEN, else the document in REDIS_URL or a running embedded
 * Redis (never started for this).
 */
export async function readServiceConfig(config: Config, options: { redis?: RedisClient } = {}): Promise<ServiceConfigResult> {
  const prefix = config.env.QUEUE_PREFIX;
  const notPublished = `no service has published its configuration under QUEUE_PREFIX=${prefix} (start it, or set REDIS_URL and QUEUE_PREFIX as the service has them)`;
  if (options.redis) return fromRedis(options.redis, prefix, notPublished);
  if (config.env.ADMIN_TOKEN) {
    const answer = await askService(config.env, "GET", "/admin/config");
    if (answer.reachable && answer.status === 200 && isServiceConfig(answer.body)) return { config: answer.body, from: `${answer.url}/admin/config` };
  }
  const url = config.env.REDIS_URL ?? (await runningEmbeddedRedis(config));
  if (url === undefined) return { config: undefined, why: `no service runs here: no embedded Redis answers under DATA_DIR=${config.env.DATA_DIR} and REDIS_URL is unset` };
  const redis = createRedis(url, "client", "streamkeeper-cli-config");
  redis.on("error", () => {});
  try {
    await untilReady(redis, 5000);
    return await fromRedis(redis, prefix, notPublished);
  } catch (error) {
    return { config: undefined, why: `Redis (${config.env.REDIS_URL ? "REDIS_URL" : "the embedded one"}) cannot be read: ${(error as Error).message}` };
  } finally {
    await closeRedis(redis);
  }
}

async function fromRedis(redis: RedisClient, prefix: string, notPublished: string): Promise<ServiceConfigResult> {
  const document = await readServiceConfigDocument(redis, prefix);
  if (document === undefined) return { config: undefined, why: notPublished };
  if (!isServiceConfig(document)) return { config: undefined, why: `the service configuration in Redis under QUEUE_PREFIX=${prefix} is of another version; restart the service` };
  return { config: document, from: "Redis" };
}

function isServiceConfig(value: unknown): value is ServiceConfig {
  const candidate = value as Partial<ServiceConfig> | undefined;
  return typeof candidate === "object" && candidate !== null && Array.isArray(candidate.routes) && typeof candidate.tenantConfigured === "boolean" && typeof candidate.sweep === "object";
}
