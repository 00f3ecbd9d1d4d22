import type { Job } from "bullmq";
import type { DeliveryJobData } from "../queue/delivery-job.js";
import type { DeliveryQueue } from "../queue/delivery-queues.js";
import { hashedJobId, jobIdFor } from "../queue/job-id.js";

/**
 * The job id this service gave an event id before raw and derived ids were kept apart;
 * differs from `jobIdFor` only for ids shaped like derived ones. GET /admin/events reads
 * jobs stored then under it.
 */
export function legacyJobIdFor(eventId: string): string {
  if (/^[A-Za-z0-9_.-]{1,128}$/.test(eventId) && !/^\d+$/.test(eventId)) return eventId;
  return hashedJobId(eventId);
}

/** The event's job stored under the id it had before raw and derived job ids were kept apart (queue/job-id.ts), if that job holds this very event. */
export async function jobUnderLegacyId(queue: DeliveryQueue, eventId: string): Promise<Job<DeliveryJobData> | undefined> {
  const legacyId = legacyJobIdFor(eventId);
  if (legacyId === jobIdFor(eventId)) return undefined;
  const legacy = await queue.getJob(legacyId);
  return legacy?.data.event.id === eventId ? legacy : undefined;
}
