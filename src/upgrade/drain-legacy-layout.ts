import type { Cluster, Redis } from "ioredis";
import type { Logger } from "../logging/logger.js";
import { deliveryQueueName, reconcileQueueName } from "../queue/queue-names.js";
import { createRepeatLog } from "../logging/repeat-log.js";
import { legacyDeliveryJobsGauge } from "./legacy-delivery-jobs-gauge.js";
import { adoptLegacyReconcileJobIds, legacyJobs, moveLegacyDeadLetters } from "./legacy-queue-layout.js";

/** A worker on a queue of the earlier layout, closed once that queue has nothing left to run. */
export interface Closable {
  close(): Promise<void>;
  /** During close(): stop waiting for jobs in flight (a second signal); they go back to their queue. */
  hurry(): void;
}

export interface LegacyDrainOptions {
  /** Any connection of the process; a failed look is logged and tried again at the next. */
  redis: Redis | Cluster;
  queuePrefix: string;
  /** Route names. */
  routes: string[];
  logger: Logger;
  /**
   * What works the earlier layout's queues, with the same processors as this layout's (a
   * worker role): a dispatcher of one route, the reconcile worker. Without it (a receiver)
   * the process only reports what is left there.
   */
  drain?: { route(route: string): Closable; reconcile(): Closable };
}

/** How often to look while a drain runs (to stop it soon after its queue empties), and otherwise. */
const drainingCheckMs = 5000;
const idleCheckMs = 60_000;

/**
 * Releases before per-queue hash tags kept every queue under the shared `{QUEUE_PREFIX}`
 * tag (legacy-queue-layout.ts). A worker role drains what one left there, with no one in
 * the loop: for each queue with jobs still to run, a worker on the old prefix with the
 * queue's own processor, closed once nothing is left to run; a route's dead letters are
 * moved into its queue's failed set. It keeps looking (an earlier release's receivers may
 * still be queueing there during a rolling upgrade). Every role sets
 * `streamkeeper_legacy_delivery_jobs{route}` to what is left. Resolves after the first look.
 */
export async function drainLegacyLayout(options: LegacyDrainOptions): Promise<Closable> {
  const { redis, queuePrefix, routes, logger, drain } = options;
  const running = new Map<string, Closable>();
  // Workers closing (a drained queue's, or every one at close): a hurry reaches them too.
  const closing = new Set<Closable>();
  const closeWorker = async (worker: Closable) => {
    closing.add(worker);
    try {
      await worker.close();
    } finally {
      closing.delete(worker);
    }
  };
  const reported = new Set<string>();
  const logLookFailed = createRepeatLog(logger, "warn", "could not look for jobs of the earlier key layout; looking again later", 60_000);
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  let looking: Promise<void> = Promise.resolve();

  // Queues seen empty once: the count is several reads, and a job moving between two of
  // its sets meanwhile is missed, so a worker stops only on the second empty look in a row.
  const seenEmpty = new Set<string>();
  const drainQueue = async (queue: string, live: number, start: () => Closable, route?: string) => {
    const worker = running.get(queue);
    if (live > 0) seenEmpty.delete(queue);
    // None started once closing: a hurry could not reach it, and the stop would wait for it.
    if (live > 0 && !worker && !closed) {
      running.set(queue, start());
      logger.warn({ queue, route, jobs: live }, "an earlier release left jobs under its key layout; running them here until none are left (docs/deploy.md, Upgrading)");
    } else if (live === 0 && worker && !seenEmpty.has(queue)) {
      seenEmpty.add(queue);
    } else if (live === 0 && worker) {
      seenEmpty.delete(queue);
      running.delete(queue);
      await closeWorker(worker);
      logger.info({ queue, route }, "the earlier key layout's queue is drained; its worker here stopped");
    }
  };

  /** dead letters of the earlier layout left for the next look (a look moves a bounded number) */
  let deadLettersLeft = false;
  const lookOnce = async () => {
    deadLettersLeft = false;
    // Every role, before it serves: a receiver gives out reconcile job ids too.
    await adoptLegacyReconcileJobIds(redis, queuePrefix);
    for (const route of routes) {
      const queue = deliveryQueueName(route);
      const { live, failed: found } = await legacyJobs(redis, queuePrefix, queue);
      let failed = found;
      if (drain && failed > 0) {
        const moved = await moveLegacyDeadLetters(redis, queuePrefix, route);
        failed = Math.max(0, failed - moved);
        if (failed > 0) deadLettersLeft = true;
        if (moved > 0) logger.warn({ route, moved }, "dead letters of the earlier key layout moved to this route's queue: see `streamkeeper dead-letters list`, replay them with `dead-letters replay`");
      }
      if (drain) await drainQueue(queue, live, () => drain.route(route), route);
      legacyDeliveryJobsGauge.set({ route }, live + failed);
      if (!drain && live + failed > 0 && !reported.has(route)) {
        // Said once per process: the workers of this release drain them.
        reported.add(route);
        logger.warn({ route, jobs: live + failed }, "delivery jobs of this route are stored under the key layout of an earlier release; the workers of this release drain them (docs/deploy.md, Upgrading)");
      }
    }
    if (!drain) return;
    const { live } = await legacyJobs(redis, queuePrefix, reconcileQueueName);
    await drainQueue(reconcileQueueName, live, drain.reconcile);
  };

  const look = () => {
    looking = lookOnce().catch((error: unknown) => logLookFailed({ err: error }));
    void looking.then(() => {
      if (closed) return;
      timer = setTimeout(look, running.size > 0 || deadLettersLeft ? drainingCheckMs : idleCheckMs);
      timer.unref();
    });
    return looking;
  };
  await look();

  return {
    async close() {
      closed = true;
      clearTimeout(timer);
      await looking;
      const workers = [...running.values()];
      running.clear();
      await Promise.all(workers.map(closeWorker));
    },
    hurry() {
      for (const worker of [...running.values(), ...closing]) worker.hurry();
    },
  };
}
