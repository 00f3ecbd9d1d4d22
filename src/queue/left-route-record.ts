import type { Job } from "bullmq";
import type { AttemptRecord } from "../archive/archive-record.js";
import type { DeliveryJobData } from "./delivery-job.js";

/**
 * The archive's record of a job that left its route undelivered (routes move, drop or
 * park): the event's outcome there, keyed by the job and the outcome, so a record written
 * twice (a stop between a page and the next) is kept once.
 */
export function leftRouteRecord(job: Job<DeliveryJobData>, route: string, outcome: "moved" | "dropped" | "parked", at: number): AttemptRecord {
  return { kind: "attempt", eventId: job.data.event.id, receivedAt: job.data.receivedAt, route, key: `${job.id}:${outcome}`, at, outcome };
}
