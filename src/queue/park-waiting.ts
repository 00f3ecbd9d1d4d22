import type { Job } from "bullmq";
import type { AttemptRecord } from "../archive/archive-record.js";
import type { Logger } from "../logging/logger.js";
import { dispatchTotal } from "../metrics/registry.js";
import type { DeliveryJobData } from "./delivery-job.js";
import type { DeliveryQueue } from "./delivery-queues.js";
import { leftRouteRecord } from "./left-route-record.js";

/** The states of a waiting job: queued (either lane) or retrying; never one in flight (`active`) or a dead letter. */
const waitingStates = ["wait", "prioritized", "delayed"] as const;

/** Jobs read at a time: memory stays bounded however large the backlog. */
const pageSize = 500;

export interface ParkDeps {
  /** Adds the parked outcomes to the archive's outbox (archive-outbox.ts); resolves once Redis has them. */
  archive(records: AttemptRecord[]): Promise<void>;
  logger: Logger;
}

/**
 * `routes park` (docs/operating.md, "A stream came back with a day of events"): every job
 * waiting on the route whose event's `time` is before `before` (ms) leaves the queue, and
 * the archive keeps the event with outcome `parked` for the route, so `replay --outcome
 * parked` sends it later. A job a worker takes meanwhile cannot be removed (BullMQ's lock)
 * and is delivered instead; an event without a readable time is not parked. A parked job
 * whose outcome cannot reach the outbox goes back to the queue as it was: a job leaves the
 * queue only for the archive, and the park stops there with an error (the admin API's 503):
 * those put back would otherwise be read and refused again without end. Returns how many
 * were parked, and the earliest arrival among them (a replay's `since`).
 */
export async function parkWaiting(queue: DeliveryQueue, route: string, before: number, { archive, logger }: ParkDeps): Promise<{ parked: number; firstArrival?: number }> {
  let parked = 0;
  let firstArrival = Number.POSITIVE_INFINITY;
  let refused = false;
  pages: for (const state of waitingStates) {
    // Jobs kept (too young, taken meanwhile) stay ahead in the state's list: read past them.
    let kept = 0;
    for (;;) {
      const jobs = (await queue.getJobs([state], kept, kept + pageSize - 1, true)).filter(Boolean) as Job<DeliveryJobData>[];
      if (jobs.length === 0) break;
      const old = jobs.filter((job) => Date.parse(job.data.event.time ?? "") < before);
      const removed = (await Promise.all(old.map(async (job) => ((await job.remove().then(() => true, () => false)) ? job : undefined)))).filter((job) => job !== undefined);
      kept += jobs.length - removed.length;
      // Jobs put back would be read (and refused) again without end: the park stops there.
      if (!(await archiveParked(queue, route, removed, archive, logger))) {
        refused = true;
        break pages;
      }
      parked += removed.length;
      if (removed.length > 0) firstArrival = Math.min(firstArrival, ...removed.map((job) => job.data.receivedAt));
    }
  }
  if (parked > 0) {
    dispatchTotal.inc({ route, outcome: "parked" }, parked);
    logger.info({ route, parked, olderThan: new Date(before).toISOString() }, "parked the route's waiting events older than the time given: they are in the archive with outcome parked; `replay --outcome parked` sends them");
  }
  if (refused) throw new Error(`the archive's outbox refused the parked events (Redis); ${parked} were parked before, the rest are back in the queue: park again once Redis takes writes`);
  return { parked, ...(parked > 0 ? { firstArrival } : {}) };
}

/** Records the removed jobs as parked (true); on failure puts them back as they were (false). */
async function archiveParked(queue: DeliveryQueue, route: string, jobs: Job<DeliveryJobData>[], archive: ParkDeps["archive"], logger: Logger): Promise<boolean> {
  if (jobs.length === 0) return true;
  const at = Date.now();
  try {
    await archive(jobs.map((job) => ({ ...leftRouteRecord(job, route, "parked", at), ...(job.data.replayId ? { replayId: job.data.replayId } : {}) })));
    return true;
  } catch (error) {
    logger.error({ err: error, route, jobs: jobs.length }, "parking: the archive's outbox did not take these events; they go back to the route's queue, and the park stops");
    await Promise.all(jobs.map((job) => queue.add(job.name, job.data, { jobId: job.id, ...(job.opts.priority ? { priority: job.opts.priority } : {}) })));
    return false;
  }
}
