import type { DeliveryQueue, DeliveryQueues } from "../queue/delivery-queues.js";
import { wholeEvent } from "../queue/delivery-job.js";
import { entityOf } from "../archive/entity-of.js";

/** Job states that hold a payload no delivery is waiting on now, or a replay's. */
const states = ["completed", "failed", "waiting", "delayed", "prioritized"] as const;

/**
 * Erasure in Redis (README.md, Erasure): the delivery jobs that still hold one of the
 * entity's payloads after its archive rows are erased: delivered jobs kept for the
 * dashboard, dead letters, and replays' jobs not yet sent (a replay never sends an
 * erased payload). Live deliveries still waiting are left to be delivered: the erasure is
 * of what this service keeps, not of what the tenant sent for delivery; a job in flight is
 * left too (its lock). Resolves with how many jobs it removed.
 */
export async function forgetEntityJobs(queues: DeliveryQueues, entity: string): Promise<number> {
  let removed = 0;
  for (const queue of queues.all()) {
    const ids = new Set<string>();
    for (const state of states) {
      const jobs = await queue.getJobs([state]);
      for (const job of jobs) {
        if (!job?.id || entityOf(wholeEvent(job.data)) !== entity) continue;
        const waitingLive = (state === "waiting" || state === "delayed" || state === "prioritized") && job.data.replayId === undefined;
        if (waitingLive) continue;
        // A job that became active meanwhile refuses removal: it is delivered, not kept.
        if (await queue.remove(job.id).then((count) => count > 0, () => false)) ids.add(job.id);
      }
    }
    await forgetQueueEvents(queues.connection, queue, ids);
    removed += ids.size;
  }
  return removed;
}

/**
 * BullMQ's events stream of the queue (capped at 10,000 entries) says each job's end, a
 * failure with its reason: the downstream's error text, which may echo the payload. The
 * entries of the removed jobs go with them.
 */
async function forgetQueueEvents(client: DeliveryQueues["connection"], queue: DeliveryQueue, ids: Set<string>): Promise<void> {
  if (ids.size === 0) return;
  const key = queue.keys.events!;
  const entries = (await client.xrange(key, "-", "+")) as Array<[string, string[]]>;
  const held = entries.filter(([, fields]) => fields.some((value, index) => index % 2 === 1 && fields[index - 1] === "jobId" && ids.has(value))).map(([id]) => id);
  for (let start = 0; start < held.length; start += 500) await client.xdel(key, ...held.slice(start, start + 500));
}
