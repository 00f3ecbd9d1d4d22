import { Queue, type Telemetry } from "bullmq";
import type { Cluster, Redis } from "ioredis";
import { defaultLiveWindowSeconds } from "../config/config.js";
import type { Route } from "../routes/route.js";
import type { DeliveryJobData } from "./delivery-job.js";
import { deliveryQueueBullPrefix, deliveryQueueName } from "./queue-names.js";

export type DeliveryQueue = Queue<DeliveryJobData>;

export interface DeliveryQueues {
  /** The queues' shared connection, for reads BullMQ has no cheap call for (describe-event.ts). */
  connection: Redis | Cluster;
  forRoute(route: string): DeliveryQueue;
  /** The route's live window in ms (its liveWindowSeconds): older events wait in its late lane (lane.ts). */
  liveWindowMs(route: string): number;
  all(): DeliveryQueue[];
  close(): Promise<void>;
}

/**
 * BullMQ wants a number of attempts; a route without maxAttemptsPerEvent is bounded by
 * DISPATCH_RETRY_WINDOW_SECONDS instead (create-delivery-processor.ts), never by this.
 */
export const unboundedAttempts = 1_000_000;

/** The name of the custom backoff the dispatch worker computes (a `fixed`/`exponential` type would bypass it). */
export const backoffType = "streamkeeper";

/**
 * A producer per route queue, on one shared connection. Delivered jobs are removed past
 * the retention; failed ones (dead letters) stay until replayed.
 */
export function createDeliveryQueues(
  connection: Redis | Cluster,
  queuePrefix: string,
  routes: Route[],
  /** Delivered jobs kept: at most `count` per route, none older than `ageSeconds` (COMPLETED_JOB_RETENTION_*). */
  completedRetention: { ageSeconds: number; count: number },
  /** BullMQ telemetry (tracing on): each job carries the trace of the request that stored it. */
  telemetry?: Telemetry,
): DeliveryQueues {
  const queues = new Map<string, DeliveryQueue>(
    routes.map((route) => [
      route.name,
      new Queue<DeliveryJobData>(deliveryQueueName(route.name), {
        connection,
        prefix: deliveryQueueBullPrefix(queuePrefix, route.name),
        skipWaitingForReady: true,
        telemetry,
        defaultJobOptions: {
          attempts: route.maxAttemptsPerEvent ?? unboundedAttempts,
          backoff: { type: backoffType },
          // By count as well as age: a burst cannot grow Redis with the arrival rate. Dedupe
          // does not lean on these jobs: the ledger remembers ids (event-ledger.ts).
          removeOnComplete: { age: completedRetention.ageSeconds, count: completedRetention.count },
          removeOnFail: false,
        },
      }),
    ]),
  );
  const liveWindows = new Map(routes.map((route) => [route.name, (route.liveWindowSeconds ?? defaultLiveWindowSeconds) * 1000]));
  return {
    connection,
    liveWindowMs: (route) => liveWindows.get(route) ?? defaultLiveWindowSeconds * 1000,
    forRoute(route) {
      const queue = queues.get(route);
      if (!queue) throw new Error(`no route named ${route}; the routes are ${[...queues.keys()].join(", ") || "none"}`);
      return queue;
    },
    all: () => [...queues.values()],
    async close() {
      await Promise.all([...queues.values()].map((queue) => queue.close()));
    },
  };
}
