import { inject } from "vitest";
import type { Config } from "../../src/config/config.js";
import { loadRoutes } from "../../src/routes/load-routes.js";
import { createDeliveryQueues } from "../../src/queue/delivery-queues.js";
import { createEventLedger } from "../../src/queue/event-ledger.js";
import { createRedis, untilReady } from "../../src/redis/redis-connection.js";

/** Reads what a service stored, through its own prefix: the ledger and each route's jobs. */
export async function inspectStore(config: Config, redisUrl = config.env.REDIS_URL ?? inject("redisUrl")) {
  const redis = createRedis(redisUrl, "client", "test-inspector");
  await untilReady(redis);
  const routes = await loadRoutes(config);
  const ledger = createEventLedger(redis, config.env.QUEUE_PREFIX, config.env.DEDUPE_TTL_SECONDS, config.env.LEDGER_SHARDS);
  const queues = createDeliveryQueues(redis, config.env.QUEUE_PREFIX, routes, { ageSeconds: 60, count: 1000 });
  return {
    ledger,
    queues,
    /** Event ids with a job in the route's queue, in any state. */
    async queuedIds(route = "default"): Promise<Set<string>> {
      const jobs = await queues.forRoute(route).getJobs(["wait", "prioritized", "delayed", "active", "completed", "failed"]);
      return new Set(jobs.map((job) => job.data.event.id));
    },
    async close() {
      await queues.close();
      redis.disconnect();
    },
  };
}
