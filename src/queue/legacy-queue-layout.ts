import type { Cluster, Redis } from "ioredis";
import { bullPrefix, deliveryQueueName } from "./queue-names.js";

/**
 * Delivery jobs a release before per-route hash tags left under the shared `{QUEUE_PREFIX}`
 * tag, per route: waiting, active, delayed, prioritized, paused and failed (dead letters).
 * This release neither sees nor delivers them (docs/deploy.md, "Upgrading").
 */
export async function legacyDeliveryJobs(redis: Redis | Cluster, queuePrefix: string, routes: string[]): Promise<Record<string, number>> {
  const found: Record<string, number> = {};
  for (const route of routes) {
    const key = (suffix: string) => `${bullPrefix(queuePrefix)}:${deliveryQueueName(route)}:${suffix}`;
    const counts = await Promise.all([
      redis.llen(key("wait")),
      redis.llen(key("active")),
      redis.llen(key("paused")),
      redis.zcard(key("delayed")),
      redis.zcard(key("prioritized")),
      redis.zcard(key("failed")),
    ]);
    const total = counts.reduce((sum, count) => sum + count, 0);
    if (total > 0) found[route] = total;
  }
  return found;
}
