import { Queue, type Job } from "bullmq";
import type { Cluster, Redis } from "ioredis";
import type { DeliveryJobData } from "./delivery-job.js";
import type { DeliveryQueue } from "./delivery-queues.js";
import { deliveryQueueBullPrefix, deliveryQueueName } from "./queue-names.js";
import type { ArchiveOutbox } from "../archive/archive-outbox.js";
import { leftRouteRecord } from "./left-route-record.js";

/** The job states of a route that is gone whose events still wait: queued, retrying, dead letters. */
const waitingStates = ["wait", "prioritized", "delayed", "active", "failed", "waiting-children"] as const;

/** Jobs moved or counted at a time: memory stays bounded however many a long outage left. */
const pageSize = 500;

export interface OrphanedRoutes {
  /** Routes with a delivery queue in Redis that are not configured, found by a SCAN (rename, removal). */
  find(): Promise<string[]>;
  /** Jobs waiting in a route's queue in any state but delivered. */
  count(route: string): Promise<number>;
  /**
   * Hands every waiting job of `route` to `target` (a configured route's queue), with fresh
   * attempts, under the same job id: an event the target already has (its job kept, or its
   * delivered mark in the ledger) is not sent again. Returns how many were moved.
   */
  move(route: string, target: DeliveryQueue): Promise<number>;
  /** Deletes the route's queue and every job in it; returns how many jobs waited. */
  drop(route: string): Promise<number>;
  close(): Promise<void>;
}

/**
 * The delivery queues of routes that are no longer configured (docs/operating.md, Removing
 * a route). BullMQ keeps them in Redis; nothing consumes them, so the service finds them,
 * says so, and hands them over or deletes them on the operator's word. The SCAN reads one
 * Redis: on a Redis Cluster it reads the node the client picks (docs/deploy.md).
 */
export function createOrphanedRoutes(connection: Redis | Cluster, queuePrefix: string, configured: string[], archive?: ArchiveOutbox): OrphanedRoutes {
  // What became of each event on the route that is gone, for the archive: `moved` or
  // `dropped`, so its outcome there never stays `pending` or `retry` once its job is gone.
  const archived = async (route: string, jobs: Job<DeliveryJobData>[], outcome: "moved" | "dropped") => {
    if (!archive || jobs.length === 0) return;
    const at = Date.now();
    await archive(jobs.map((job) => leftRouteRecord(job, route, outcome, at)));
  };
  const queues = new Map<string, Queue<DeliveryJobData>>();
  const queueOf = (route: string) => {
    let queue = queues.get(route);
    if (!queue) {
      queue = new Queue<DeliveryJobData>(deliveryQueueName(route), { connection, prefix: deliveryQueueBullPrefix(queuePrefix, route), skipWaitingForReady: true });
      queue.on("error", () => {}); // each call's own rejection reports it
      queues.set(route, queue);
    }
    return queue;
  };
  const count = async (route: string) => {
    const counts = await queueOf(route).getJobCounts(...waitingStates);
    return Object.values(counts).reduce((sum, n) => sum + n, 0);
  };
  return {
    async find() {
      // `{<prefix>:deliver-<route>}:deliver-<route>:meta`, written by BullMQ for every queue.
      const head = `{${queuePrefix}:deliver-`;
      const found = new Set<string>();
      const node = "nodes" in connection ? (connection.nodes("master")[0] ?? connection) : connection;
      let cursor = "0";
      do {
        const [next, keys] = (await (node as Redis).scan(cursor, "MATCH", `${head.replace(/[*?[\]\\]/g, "\\$&")}*`, "COUNT", 1000)) as [string, string[]];
        cursor = next;
        for (const key of keys) {
          const close = key.indexOf("}:");
          if (close > head.length) found.add(key.slice(head.length, close));
        }
      } while (cursor !== "0");
      return [...found].filter((route) => !configured.includes(route) && !route.includes("}")).sort();
    },
    count,
    async move(route, target) {
      const source = queueOf(route);
      let moved = 0;
      for (;;) {
        const jobs = (await source.getJobs([...waitingStates], 0, pageSize - 1, true)).filter(Boolean) as Job<DeliveryJobData>[];
        if (jobs.length === 0) return moved;
        await archived(route, jobs, "moved");
        for (const job of jobs) {
          // `recheck`: the target may have delivered the event already and no longer keep its
          // job (COMPLETED_JOB_RETENTION_*): its first run reads the ledger's mark.
          const { failingSince: _restart, ...data } = job.data;
          await target.add(job.name, { ...data, recheck: true }, { jobId: job.id, ...(job.opts.priority ? { priority: job.opts.priority } : {}) });
          // A job a crashed worker held (active, locked) cannot be removed while locked: drop it the hard way.
          await job.remove().catch(() => source.remove(job.id!, { removeChildren: true }));
          moved++;
        }
      }
    },
    async drop(route) {
      const waiting = await count(route);
      // Said to the archive a page at a time before they go (recorded twice after a stop in
      // between: kept once, by the record's key).
      for (let start = 0; archive && start < waiting; start += pageSize) {
        await archived(route, (await queueOf(route).getJobs([...waitingStates], start, start + pageSize - 1, true)).filter(Boolean) as Job<DeliveryJobData>[], "dropped");
      }
      await queueOf(route).obliterate({ force: true });
      return waiting;
    },
    async close() {
      await Promise.all([...queues.values()].map((queue) => queue.close()));
    },
  };
}
