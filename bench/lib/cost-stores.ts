import { settings } from "../../src/config/config.js";
import type { RedisClient } from "../../src/redis/redis-connection.js";
import { createAdmission } from "../../src/queue/admission.js";
import { createDeliveryQueues } from "../../src/queue/delivery-queues.js";
import { createEventLedger } from "../../src/queue/event-ledger.js";
import { createEventStore } from "../../src/queue/event-store.js";
import { createFanOut } from "../../src/queue/fan-out.js";
import { routesMatching, type Route } from "../../src/routes/route.js";

/** DEDUPE_TTL_SECONDS and LEDGER_SHARDS as the service defaults them. */
const defaults = { ttlSeconds: settings.DEDUPE_TTL_SECONDS[0].parse(undefined), shards: settings.LEDGER_SHARDS[0].parse(undefined) };

/**
 * One round's stores for the cost tools (bench/store-cost.ts, worker-cost.ts), built as the
 * service builds them under their own prefix: the route's queues, the ledger (its default
 * window and shards) and the event store, the long way or, with `admission`, in one
 * round trip (service/create-stores.ts).
 */
export function costStores(redis: RedisClient, prefix: string, route: Route, { admission = false } = {}) {
  const queues = createDeliveryQueues(redis, prefix, [route], { ageSeconds: 3600, count: 1000 });
  const ledger = createEventLedger(redis, prefix, defaults.ttlSeconds, defaults.shards);
  const admit = admission ? createAdmission({ ledger, queues }) : undefined;
  const store = createEventStore({ ledger, fanOut: createFanOut(queues), routesFor: routesMatching([route]), admit });
  return { queues, queue: queues.forRoute(route.name), store };
}
