import { redisUp } from "../metrics/registry.js";
import { bullPrefix, deliveryQueueBullPrefix } from "../queue/queue-names.js";
import type { RedisClient } from "../redis/redis-connection.js";
import type { Route } from "../routes/route.js";

/**
 * Whether events can be stored now (/readyz, the stream watcher's auto-enable): one key
 * written in the shared slot and one in each route queue's, so on a cluster, ready means
 * every slot an event needs to be queued answers.
 */
export function createReadiness(client: RedisClient, queuePrefix: string, routes: Route[]): () => Promise<boolean> {
  const readyKeys = [bullPrefix(queuePrefix), ...routes.map((route) => deliveryQueueBullPrefix(queuePrefix, route.name))].map((tag) => `${tag}:readyz`);
  return async () => {
    try {
      await Promise.all(readyKeys.map((key) => client.set(key, Date.now(), "PX", 10_000)));
      redisUp.set(1);
      return true;
    } catch {
      redisUp.set(0);
      return false;
    }
  };
}
