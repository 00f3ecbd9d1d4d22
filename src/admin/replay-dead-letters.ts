import type { Job } from "bullmq";
import type { DeliveryJobData } from "../queue/delivery-job.js";
import type { DeliveryQueue, DeliveryQueues } from "../queue/delivery-queues.js";
import { deadLetterPageSize, routeOf } from "./list-dead-letters.js";

/** `all`, or job ids given as `<route>/<job-id>` or bare (every route that has that dead letter). */
export type DeadLetterSelection = { all: true } | { ids: string[] };

export interface Replayed {
  route: string;
  jobId: string;
}

export interface ReplayResult {
  replayed: number;
  /** ids that name no dead letter; when there are any, nothing was replayed */
  unknown: string[];
}

/**
 * Sends dead letters through their route's policy again, with fresh attempts, reporting
 * each to `onReplayed` as it goes. BullMQ's `job.retry("failed")` keeps `attemptsMade`
 * unless told otherwise (reprocessJob.lua), which would leave an exhausted job a single
 * attempt; so both counters are reset (and so DISPATCH_RETRY_WINDOW_SECONDS starts again).
 * A replayed job keeps its priority: a reconciled event still yields to live ones.
 *
 * `--all` works a page at a time, oldest first, up to the newest dead letter there was
 * when it began (by its place in the failed set, not by our clock: a worker's may run
 * ahead of ours), each id once: a replayed job that fails again at once is not replayed
 * twice, and one failing for the first time meanwhile waits for the next replay. Any
 * Redis error rejects (the command exits 1); only a job replayed or removed meanwhile
 * (another operator, a second replay) is skipped.
 */
export async function replayDeadLetters(
  queues: DeliveryQueues,
  selection: DeadLetterSelection,
  onReplayed: (replayed: Replayed) => void = () => {},
): Promise<ReplayResult> {
  let replayed = 0;
  const replay = async (queue: DeliveryQueue, job: Job<DeliveryJobData>) => {
    if (await retryFresh(job)) {
      replayed++;
      onReplayed({ route: routeOf(queue), jobId: job.id ?? "" });
    }
  };

  if ("all" in selection) {
    for (const queue of queues.all()) {
      const failed = queue.keys.failed!;
      // The newest when it began: its finish time as the worker that failed it recorded it.
      const newest = (await queues.connection.zrange(failed, "-1", "-1", "WITHSCORES"))[1];
      if (newest === undefined) continue;
      // Ids only (not jobs): a worker whose clock lags ours may fail a replayed job "before" the newest.
      const done = new Set<string>();
      for (;;) {
        // Oldest first from the head each time: replayed jobs leave the failed set.
        const ids = (await queues.connection.zrangebyscore(failed, "-inf", newest, "LIMIT", 0, deadLetterPageSize + done.size)).filter((id) => !done.has(id)).slice(0, deadLetterPageSize);
        if (ids.length === 0) break;
        for (const id of ids) done.add(id);
        const page = await Promise.all(ids.map((id) => queue.getJob(id)));
        await Promise.all(page.filter((job) => job !== undefined).map((job) => replay(queue, job)));
      }
    }
    return { replayed, unknown: [] };
  }

  // Resolve every id before replaying any, so a typo does not leave a half-done replay.
  const targets: { queue: DeliveryQueue; job: Job<DeliveryJobData> }[] = [];
  const unknown: string[] = [];
  for (const id of selection.ids) {
    const found = await findDeadLetters(queues, id);
    if (found.length === 0) unknown.push(id);
    targets.push(...found);
  }
  if (unknown.length > 0) return { replayed: 0, unknown };
  for (const { queue, job } of targets) await replay(queue, job);
  return { replayed, unknown };
}

/** False when the job is no longer a dead letter (BullMQ: missing key, or not in the failed state). */
async function retryFresh(job: Job<DeliveryJobData>): Promise<boolean> {
  try {
    await job.retry("failed", { resetAttemptsMade: true, resetAttemptsStarted: true });
    return true;
  } catch (error) {
    if (/Missing key for job|is not in the failed state/.test((error as Error).message)) return false;
    throw error;
  }
}

async function findDeadLetters(queues: DeliveryQueues, id: string): Promise<{ queue: DeliveryQueue; job: Job<DeliveryJobData> }[]> {
  const slash = id.indexOf("/");
  const route = slash > 0 ? id.slice(0, slash) : undefined;
  const candidates = queues.all().filter((queue) => route === undefined || routeOf(queue) === route);
  const jobId = route === undefined ? id : id.slice(slash + 1);
  const found = await Promise.all(
    candidates.map(async (queue) => {
      const job = await queue.getJob(jobId);
      return job && (await job.isFailed()) ? { queue, job } : undefined;
    }),
  );
  return found.filter((target) => target !== undefined);
}
