import type { Cluster, Redis } from "ioredis";
import { loadLua } from "../redis/load-lua.js";
import { bullPrefix, deliveryQueueBullPrefix, deliveryQueueName, reconcileQueueBullPrefix, reconcileQueueName } from "../queue/queue-names.js";

/**
 * The BullMQ prefix every queue had before per-queue hash tags: the shared `{QUEUE_PREFIX}`
 * tag. Only the drain of what an earlier release left there (drain-legacy-layout.ts) uses it.
 */
export function legacyBullPrefix(queuePrefix: string): string {
  return bullPrefix(queuePrefix);
}

export interface LegacyJobs {
  /** Waiting, active, delayed, prioritized or paused: jobs still to be run. */
  live: number;
  /** Failed for good: for a route queue, its dead letters. */
  failed: number;
}

/** The jobs one queue (`deliver-<route>` or `reconcile`) holds under the earlier layout. */
export async function legacyJobs(redis: Redis | Cluster, queuePrefix: string, queueName: string): Promise<LegacyJobs> {
  const key = (suffix: string) => `${legacyBullPrefix(queuePrefix)}:${queueName}:${suffix}`;
  const [wait, active, paused, delayed, prioritized, failed] = await Promise.all([
    redis.llen(key("wait")),
    redis.llen(key("active")),
    redis.llen(key("paused")),
    redis.zcard(key("delayed")),
    redis.zcard(key("prioritized")),
    redis.zcard(key("failed")),
  ]);
  return { live: wait + active + paused + delayed + prioritized, failed };
}

// A dead letter copied onto the new queue's slot, then forgotten on the old one while it
// is still a dead letter there: two slots, two scripts (their keys and arguments at their top).
const adoptScript = loadLua(new URL("./legacy-adopt-dead-letter.lua", import.meta.url));
const forgetScript = loadLua(new URL("./legacy-forget-dead-letter.lua", import.meta.url));
const reconcileIdsScript = loadLua(new URL("./legacy-reconcile-job-ids.lua", import.meta.url));

type AdoptCommands = {
  streamkeeperLegacyAdopt(jobKey: string, failedKey: string, jobId: string, failedAt: string, ...fields: string[]): Promise<number>;
  streamkeeperLegacyForget(failedKey: string, jobKey: string, logsKey: string, jobId: string): Promise<number>;
};

/**
 * Moves a route's dead letters of the earlier layout into the failed set of its queue,
 * as they are (event, attempts, failed reason, failed at), so `dead-letters list|replay`,
 * the dashboard and the queue gauges see them like any other. Two slots, so two steps:
 * copy, then forget the old one. A crash in between leaves the dead letter in both places;
 * the next pass finds the copy there and only forgets the old one. Each copy is marked
 * `recheck`, so a replay reads the ledger before sending: the same dead letter replayed by
 * an earlier release meanwhile is not delivered twice once its 2xx is recorded. At most
 * `max` a call, so a look stays short; answers how many moved.
 */
export async function moveLegacyDeadLetters(redis: Redis | Cluster, queuePrefix: string, route: string, max = 2000): Promise<number> {
  redis.defineCommand("streamkeeperLegacyAdopt", { numberOfKeys: 2, lua: adoptScript });
  redis.defineCommand("streamkeeperLegacyForget", { numberOfKeys: 3, lua: forgetScript });
  const commands = redis as unknown as AdoptCommands;
  const queue = deliveryQueueName(route);
  const oldKey = (suffix: string) => `${legacyBullPrefix(queuePrefix)}:${queue}:${suffix}`;
  const newKey = (suffix: string) => `${deliveryQueueBullPrefix(queuePrefix, route)}:${queue}:${suffix}`;
  let moved = 0;
  for (let handled = 0; handled < max; ) {
    // A page at a time from the head: each one handled leaves the set.
    const page = await redis.zrange(oldKey("failed"), 0, String(Math.min(200, max - handled) - 1));
    if (page.length === 0) return moved;
    handled += page.length;
    for (const jobId of page) {
      const job = await redis.hgetall(oldKey(jobId));
      // BullMQ scores its failed set by the job's finishedOn.
      const failedAt = job.finishedOn ?? String(Date.now());
      if (job.data !== undefined) job.data = withRecheck(job.data);
      if (Object.keys(job).length > 0) moved += await commands.streamkeeperLegacyAdopt(newKey(jobId), newKey("failed"), jobId, failedAt, ...Object.entries(job).flat());
      await commands.streamkeeperLegacyForget(oldKey("failed"), oldKey(jobId), oldKey(`${jobId}:logs`), jobId);
    }
  }
  return moved;
}

/** A job's data (JSON) with `recheck` set (delivery-job.ts); left as it is when it is not an object. */
function withRecheck(data: string): string {
  try {
    const parsed: unknown = JSON.parse(data);
    return parsed && typeof parsed === "object" && !Array.isArray(parsed) ? JSON.stringify({ ...parsed, recheck: true }) : data;
  } catch {
    return data;
  }
}

/**
 * Reconcile job ids are BullMQ's counter, which the reconcile queue's new place starts
 * afresh: every role moves it a million past the old one at each look, so ids given out
 * by an earlier release, before the upgrade or by its processes still running during it,
 * do not name another job after it (`GET /admin/reconcile/:jobId`).
 */
export async function adoptLegacyReconcileJobIds(redis: Redis | Cluster, queuePrefix: string): Promise<void> {
  const last = await redis.get(`${legacyBullPrefix(queuePrefix)}:${reconcileQueueName}:id`);
  if (last === null) return;
  const counter = `${reconcileQueueBullPrefix(queuePrefix)}:${reconcileQueueName}:id`;
  await redis.eval(reconcileIdsScript, 1, counter, last);
}
