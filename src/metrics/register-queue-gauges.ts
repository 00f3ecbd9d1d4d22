import type { Queue } from "bullmq";
import type { Cluster, Redis } from "ioredis";
import { onScrape, queueJobs, queueOldestWaitingAge, routeWaiting } from "./registry.js";

/** The job states of `streamkeeper_queue_jobs`, and the BullMQ key each one lives in. */
const states = [
  ["waiting", "wait", "llen"],
  ["prioritized", "prioritized", "zcard"],
  ["delayed", "delayed", "zcard"],
  ["active", "active", "llen"],
  ["completed", "completed", "zcard"],
  ["failed", "failed", "zcard"],
] as const;

/**
 * Makes `/metrics` read every queue at scrape time: `streamkeeper_queue_jobs{queue,state}`,
 * `streamkeeper_route_waiting{route,lane}` (a route's queue: `routeOf` names its route),
 * `streamkeeper_queue_oldest_waiting_age_seconds{queue}` and `streamkeeper_redis_up`.
 * `connection` is the service's fail-fast client connection (the queues' own). Returns
 * the removal, for `close()`.
 *
 * Cost: two pipelined round trips per scrape whatever the number of queues (counts and
 * head-of-queue ids, then those jobs' timestamps), instead of BullMQ's getJobCounts Lua
 * script plus a getJobs call per queue; on a cluster, those of each queue go together.
 */
export function registerQueueGauges(connection: Redis | Cluster, queues: () => Queue[], routeOf: (queueName: string) => string | undefined): () => void {
  return onScrape(async () => {
    try {
      const now = Date.now();
      const read = queues();
      const perQueue = states.length + 2;
      // PING first, so redis_up is measured even with no queue.
      const [, ...replies] = await exec(connection, [[["ping"]], ...read.map(headCommands)]);
      const waiting = read.flatMap((queue, index) => {
        const reply = replies.slice(index * perQueue, (index + 1) * perQueue);
        states.forEach(([state], at) => queueJobs.set({ queue: queue.name, state }, Number(reply[at])));
        const route = routeOf(queue.name);
        // Live: the wait list (no priority); late: the prioritized set (queue/lane.ts).
        if (route !== undefined) for (const [lane, at] of [["live", 0], ["late", 1]] as const) routeWaiting.set({ route, lane }, Number(reply[at]));
        // The oldest plain waiting job is the list's tail (BullMQ LPUSHes and workers take
        // from the right); of the prioritized set, the next to run.
        const [tail, [next] = []] = reply.slice(states.length) as [string | null, string[]];
        return [tail, next].filter((id): id is string => typeof id === "string").map((id) => ({ queue, id }));
      });
      const stamps = await exec(connection, waiting.map(({ queue, id }) => [["hmget", queue.toKey(id), "timestamp", "processedOn"]]));
      const oldest = new Map(read.map((queue) => [queue.name, 0]));
      waiting.forEach(({ queue }, index) => {
        // A retried job counts from its last attempt, not from when it first arrived; a job
        // removed since the first round trip has no fields and is skipped.
        const times = (stamps[index] as Array<string | null>).map(Number).filter((ms) => ms > 0);
        if (times.length > 0) oldest.set(queue.name, Math.max(oldest.get(queue.name)!, (now - Math.max(...times)) / 1000));
      });
      for (const [queue, age] of oldest) queueOldestWaitingAge.set({ queue }, age);
      return true;
    } catch {
      // A scrape must answer even when Redis is gone: these queues' gauges are then
      // absent and redis_up says why (the alert StreamkeeperRedisDown keys on it).
      for (const queue of queues()) {
        for (const [state] of states) queueJobs.remove({ queue: queue.name, state });
        queueOldestWaitingAge.remove({ queue: queue.name });
      }
      return false;
    }
  });
}

/**
 * The replies of every group's commands, in order: one pipeline on one Redis; on a
 * cluster one per group (a queue's keys share its hash tag, different queues' need not
 * share a node, and a cluster pipeline must stay on one), sent together.
 */
async function exec(connection: Redis | Cluster, groups: string[][][]): Promise<unknown[]> {
  const run = async (commands: string[][]) => {
    if (commands.length === 0) return [];
    const results = (await connection.pipeline(commands).exec()) ?? [];
    return results.map(([error, reply]) => {
      if (error) throw error;
      return reply;
    });
  };
  if (!connection.isCluster) return run(groups.flat());
  return (await Promise.all(groups.map(run))).flat();
}

function headCommands(queue: Queue): string[][] {
  return [
    ...states.map(([, key, command]) => [command, queue.keys[key]!]),
    ["lindex", queue.keys.wait!, "-1"],
    ["zrange", queue.keys.prioritized!, "0", "0"],
  ];
}
