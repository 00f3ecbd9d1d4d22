import type { Job } from "bullmq";
import type { Origin } from "../events/cloud-event.js";
import type { DeliveryJobData } from "../queue/delivery-job.js";
import type { DeliveryQueue, DeliveryQueues } from "../queue/delivery-queues.js";
import { routeOfQueue } from "../queue/queue-names.js";

/** An event that failed for good on one route: a failed job, kept until replayed. */
export interface DeadLetter {
  route: string;
  jobId: string;
  eventId: string;
  type: string;
  origin: Origin;
  attempts: number;
  failedReason: string;
  /** ISO 8601 */
  failedAt?: string;
}

/** Dead letters read from Redis at a time: memory stays bounded however many a long outage left. */
export const deadLetterPageSize = 500;

/**
 * Every dead letter of every route queue, route by route, the most recent first, one page
 * of `deadLetterPageSize` at a time: never all loaded at once.
 */
export async function* listDeadLetters(queues: DeliveryQueues): AsyncGenerator<DeadLetter[]> {
  for (const queue of queues.all()) {
    for (let start = 0; ; start += deadLetterPageSize) {
      const jobs = (await queue.getFailed(start, start + deadLetterPageSize - 1)).filter(Boolean);
      if (jobs.length > 0) yield jobs.map((job) => deadLetterOf(routeOf(queue), job));
      if (jobs.length < deadLetterPageSize) break;
    }
  }
}

/** The route a delivery queue belongs to. */
export function routeOf(queue: DeliveryQueue): string {
  return routeOfQueue(queue.name) ?? queue.name;
}

export function deadLetterOf(route: string, job: Job<DeliveryJobData>): DeadLetter {
  return {
    route,
    jobId: job.id ?? "",
    eventId: job.data.event.id,
    type: job.data.event.type,
    origin: job.data.origin,
    attempts: job.attemptsMade,
    failedReason: job.failedReason,
    failedAt: job.finishedOn ? new Date(job.finishedOn).toISOString() : undefined,
  };
}
