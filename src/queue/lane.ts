import type { CloudEvent, Origin } from "../events/cloud-event.js";
import { latePriority, reconcilePriority } from "./delivery-job.js";

/** The two lanes of a route's queue: `live` jobs have no priority, `late` ones wait behind them (delivery-job.ts). */
export type Lane = "live" | "late";

/**
 * Whether an event is late on a route: its `time` more than the route's live window before
 * its arrival (a stream re-enabled after an outage, a tenant's redelivery, a pull backfill).
 * An event without a readable `time` is live: nothing says it is old.
 */
export function isLate(time: string | undefined, receivedAt: number, liveWindowMs: number): boolean {
  const at = time === undefined ? NaN : Date.parse(time);
  return receivedAt - at > liveWindowMs;
}

/**
 * An event's priority on one route (BullMQ's: none first, then the lower number): live
 * events none, late ones `latePriority`, reconciled ones `reconcilePriority` whatever
 * their time (they are recoveries, and wait behind live events by contract).
 */
export function priorityOn(liveWindowMs: number, event: CloudEvent, { origin, receivedAt }: { origin: Origin; receivedAt: number }): number | undefined {
  if (origin === "reconcile") return reconcilePriority;
  return isLate(event.time, receivedAt, liveWindowMs) ? latePriority : undefined;
}

/** The lane a job waits in, from its priority (its `opts.priority`): only jobs without one are live (late, reconciled and replayed ones wait behind them). */
export function laneOfPriority(priority: number | undefined): Lane {
  return priority !== undefined && priority > 0 ? "late" : "live";
}
