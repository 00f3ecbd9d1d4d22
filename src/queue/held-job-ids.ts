import type { DeliveryQueue } from "./delivery-queues.js";

/** What an earlier arrival left under a job id: `dead_letter` (failed) or `delivered` (completed, still kept). */
export type HeldBy = "dead_letter" | "delivered";

/**
 * Per queue, whether a finished job holds `jobId`: BullMQ ignores an add under an id it
 * still has, whatever that job's state, so an arrival the ledger admits as new (its record
 * expired with DEDUPE_TTL_SECONDS) would get no job there, while a dead letter stays until
 * replayed and a delivered job until the next completion on its route removes it
 * (removeOnComplete acts lazily). A job still waiting or retrying is left as it is: it
 * delivers the event, as it does when a retried store finds its own job there. One round
 * trip, the queues' in parallel (BullMQ's getState script each).
 */
export function heldJobIds(queues: DeliveryQueue[], jobId: string): Promise<Array<HeldBy | undefined>> {
  return Promise.all(
    queues.map(async (queue) => {
      const state = await queue.getJobState(jobId);
      return state === "failed" ? "dead_letter" : state === "completed" ? "delivered" : undefined;
    }),
  );
}
