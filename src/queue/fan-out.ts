import type { CloudEvent, Origin } from "../events/cloud-event.js";
import { reconcilePriority } from "./delivery-job.js";
import type { DeliveryQueues } from "./delivery-queues.js";
import { jobIdFor, replayJobIdFor } from "./job-id.js";

export interface FanOutJob {
  origin: Origin;
  streamId?: string;
  /** ms since epoch when this service stored the event */
  receivedAt: number;
  /** a forced reconcile: its own job id, and delivered where a route already has the event */
  force?: boolean;
  /** the ledger held route deliveries but no arrival (delivery-job.ts) */
  recheck?: boolean;
}

/** Adds one delivery job per route; resolves once every job is in Redis. */
export type FanOut = (event: CloudEvent, routes: string[], job: FanOutJob) => Promise<void>;

/**
 * One job per route, each in the route's own queue, under an id derived from the event
 * id: BullMQ ignores a second add with the same id, so a store retried after a Redis
 * fault adds nothing twice. Reconciled events wait behind live ones (a lower priority).
 */
export function createFanOut(queues: DeliveryQueues): FanOut {
  return async (event, routes, { origin, streamId, receivedAt, force = false, recheck = false }) => {
    const jobId = force ? replayJobIdFor(event.id, receivedAt) : jobIdFor(event.id);
    const data = { event, origin, streamId, receivedAt, force: force || undefined, recheck: recheck || undefined };
    const priority = origin === "reconcile" ? reconcilePriority : undefined;
    await Promise.all(routes.map((route) => queues.forRoute(route).add(event.type, data, { jobId, priority })));
  };
}
