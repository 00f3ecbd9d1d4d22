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

const pageSize = 500;

/** Every dead letter of every route queue, route by route, the most recent first. */
export async function listDeadLetters(queues: DeliveryQueues): Promise<DeadLetter[]> {
  const letters: DeadLetter[] = [];
  for (const queue of queues.all()) {
    for await (const job of failedJobs(queue)) letters.push(deadLetterOf(routeOf(queue), job));
  }
  return letters;
}

export async function* failedJobs(queue: DeliveryQueue): AsyncGenerator<Job<DeliveryJobData>> {
  for (let start = 0; ; start += pageSize) {
    const jobs = await queue.getFailed(start, start + pageSize - 1);
    for (const job of jobs) if (job) yield job;
    if (jobs.length < pageSize) return;
  }
}

/** The route a delivery queue belongs to. */
export function routeOf(queue: DeliveryQueue): string {
  return routeOfQueue(queue.name) ?? queue.name;
}

function deadLetterOf(route: string, job: Job<DeliveryJobData>): DeadLetter {
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
