import type { DeliveryQueue, DeliveryQueues } from "../queue/delivery-queues.js";
import { failedJobs, routeOf } from "./list-dead-letters.js";

/** `all`, or job ids given as `<route>/<job-id>` or bare (every route that has that dead letter). */
export type DeadLetterSelection = { all: true } | { ids: string[] };

export interface ReplayResult {
  replayed: { route: string; jobId: string }[];
  /** ids that name no dead letter; when there are any, nothing was replayed */
  unknown: string[];
}

/**
 * Sends dead letters through their route's policy again, with fresh attempts. BullMQ's
 * `job.retry("failed")` keeps `attemptsMade` unless told otherwise (reprocessJob.lua),
 * which would leave an exhausted job a single attempt; so both counters are reset.
 * A replayed job keeps its priority: a reconciled event still yields to live ones.
 */
export async function replayDeadLetters(queues: DeliveryQueues, selection: DeadLetterSelection): Promise<ReplayResult> {
  const targets: { queue: DeliveryQueue; jobId: string }[] = [];
  const unknown: string[] = [];
  if ("all" in selection) {
    for (const queue of queues.all()) for await (const job of failedJobs(queue)) targets.push({ queue, jobId: job.id ?? "" });
  } else {
    // Resolve every id before replaying any, so a typo does not leave a half-done replay.
    for (const id of selection.ids) {
      const found = await findDeadLetters(queues, id);
      if (found.length === 0) unknown.push(id);
      targets.push(...found);
    }
    if (unknown.length > 0) return { replayed: [], unknown };
  }
  const replayed: ReplayResult["replayed"] = [];
  for (const { queue, jobId } of targets) {
    const job = await queue.getJob(jobId);
    try {
      await job?.retry("failed", { resetAttemptsMade: true, resetAttemptsStarted: true });
    } catch {
      continue; // replayed or removed meanwhile (another operator, a second replay)
    }
    if (job) replayed.push({ route: routeOf(queue), jobId });
  }
  return { replayed, unknown };
}

async function findDeadLetters(queues: DeliveryQueues, id: string): Promise<{ queue: DeliveryQueue; jobId: string }[]> {
  const slash = id.indexOf("/");
  const route = slash > 0 ? id.slice(0, slash) : undefined;
  const candidates = queues.all().filter((queue) => route === undefined || routeOf(queue) === route);
  const jobId = route === undefined ? id : id.slice(slash + 1);
  const found = await Promise.all(
    candidates.map(async (queue) => ((await (await queue.getJob(jobId))?.isFailed()) ? { queue, jobId } : undefined)),
  );
  return found.filter((target) => target !== undefined);
}
