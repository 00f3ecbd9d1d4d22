import type { DeliveryQueues } from "./delivery-queues.js";

/** What an earlier arrival left under a job id: `dead_letter` (failed) or `delivered` (completed, still kept). */
export type HeldBy = "dead_letter" | "delivered";

/**
 * Per route, whether a finished job holds `jobId` in its queue: BullMQ ignores an add under
 * an id it still has, whatever that job's state, so an arrival the ledger admits as new (its
 * record expired with DEDUPE_TTL_SECONDS) would get no job there, while a dead letter stays
 * until replayed and a delivered job until the next completion on its route removes it
 * (removeOnComplete acts lazily). A job still waiting or retrying is left as it is: it
 * delivers the event, as it does when a retried store finds its own job there. Two sorted-set
 * lookups per route, sent together: one round trip. Not BullMQ's getState, which scans the
 * wait list (LPOS): a backlog behind a down route would make every store block Redis.
 */
export function heldJobIds(queues: DeliveryQueues, routes: string[], jobId: string): Promise<Array<HeldBy | undefined>> {
  return Promise.all(
    routes.map(async (route) => {
      const { keys } = queues.forRoute(route);
      const [failed, completed] = await Promise.all([queues.connection.zscore(keys.failed!, jobId), queues.connection.zscore(keys.completed!, jobId)]);
      return failed !== null ? "dead_letter" : completed !== null ? "delivered" : undefined;
    }),
  );
}
