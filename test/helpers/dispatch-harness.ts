import { randomUUID } from "node:crypto";
import { createDispatcher, type Dispatcher, type DispatcherOptions } from "../../src/dispatch/create-dispatcher.js";
import { routesMatching, type Route } from "../../src/routes/route.js";
import { createLogger } from "../../src/logging/logger.js";
import { createAdmission } from "../../src/queue/admission.js";
import { createDeliveryQueues, type DeliveryQueues } from "../../src/queue/delivery-queues.js";
import { createEventLedger, type EventLedger } from "../../src/queue/event-ledger.js";
import { createEventStore, type EventStore } from "../../src/queue/event-store.js";
import { createFanOut } from "../../src/queue/fan-out.js";
import { createFilteredRecorder } from "../../src/queue/record-filtered.js";
import { createRouteChooser } from "../../src/routes/route-chooser.js";
import { closeRedis, createRedis, untilReady } from "../../src/redis/redis-connection.js";

/** A route for tests: quick to give up, with a small timeout. */
export function testRoute(name: string, url: string, overrides: Partial<Route> = {}): Route {
  return { name, match: ["*"], url, headers: {}, timeoutMs: 2000, maxAttemptsPerEvent: 5, concurrency: 4, ...overrides };
}

export interface DispatchHarness {
  prefix: string;
  queues: DeliveryQueues;
  ledger: EventLedger;
  store: EventStore;
  /** Starts a dispatcher for the harness's routes (stopped by `close`). */
  startDispatcher(options?: Partial<DispatcherOptions>): Dispatcher;
  close(): Promise<void>;
}

/**
 * The queue side of the service for dispatch tests: queues, ledger and event store on a
 * fresh prefix, and dispatchers with a 20 ms backoff so retries are quick.
 */
export async function createDispatchHarness(redisUrl: string, routes: Route[], prefix = `test-${randomUUID()}`, { ledgerTtlSeconds = 600, gatherMarksMs = 0 } = {}): Promise<DispatchHarness> {
  const redis = createRedis(redisUrl, "client");
  redis.on("error", () => {}); // a test that stops Redis expects these
  await untilReady(redis);
  const queues = createDeliveryQueues(redis, prefix, routes, { ageSeconds: 60, count: 1000 });
  for (const queue of queues.all()) queue.on("error", () => {});
  const ledger = createEventLedger(redis, prefix, ledgerTtlSeconds, undefined, { gatherMarksMs });
  const store = createEventStore({ ledger, fanOut: createFanOut(queues), routesFor: routesMatching(routes), narrow: createRouteChooser(routes).narrow, onFiltered: createFilteredRecorder(ledger, createLogger("silent")), admit: createAdmission({ ledger, queues }) });
  const dispatchers: Dispatcher[] = [];
  return {
    prefix,
    queues,
    ledger,
    store,
    startDispatcher(options = {}) {
      // Its own connection, as each process has: a test may stop one dispatcher and start another.
      const connection = createRedis(redisUrl, "worker", "test-dispatch");
      connection.on("error", () => {});
      const started = createDispatcher({
        connection,
        queuePrefix: prefix,
        routes,
        ledger,
        logger: createLogger("silent"),
        backoffBaseMs: 20,
        backoffMaxMs: 5000,
        shutdownTimeoutMs: 2000,
        ...options,
      });
      const dispatcher: Dispatcher = { close: async () => (await started.close(), void (await closeRedis(connection))), hurry: () => started.hurry() };
      dispatchers.push(dispatcher);
      return dispatcher;
    },
    async close() {
      await Promise.all(dispatchers.map((dispatcher) => dispatcher.close()));
      await queues.close();
      redis.disconnect();
    },
  };
}
