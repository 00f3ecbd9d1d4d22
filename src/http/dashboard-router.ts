import { createBullBoard } from "@bull-board/api";
import { BullMQAdapter } from "@bull-board/api/bullMQAdapter";
import { ExpressAdapter } from "@bull-board/express";
import type { Job, Queue } from "bullmq";
import express, { type Router } from "express";
import { routeOfQueue } from "../queue/queue-names.js";

/** Where the admin app mounts its routers (admin-app.ts) and the dashboard below it. */
const basePath = "/admin/queues";

/**
 * The queue dashboard (README.md#http-surfaces: `/admin/queues`), bull-board over
 * every delivery queue and the reconcile queue. It has no login of its own: the admin
 * router's `adminAuth` runs before it, and a browser resends the Basic credentials for
 * the page, its assets and its API calls alike. Not read-only, so a dead letter (a failed
 * job of a `deliver-<route>` queue) can be retried from the page, with fresh attempts.
 */
export function createDashboardRouter(queues: Queue[]): Router {
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(basePath);
  createBullBoard({
    queues: queues.map((queue) => new FreshRetryAdapter(queue, { readOnlyMode: false, allowRetries: true, description: describe(queue.name) })),
    serverAdapter,
    options: { uiConfig: { boardTitle: "Streamkeeper", hideDocsLink: true, sortQueues: true } },
  });
  const router = express.Router();
  router.use("/queues", serverAdapter.getRouter() as Router);
  return router;
}

/**
 * bull-board's "Retry" and "Retry all" call `job.retry(state)` on the jobs its adapter
 * hands out, and BullMQ then keeps `attemptsMade`: an exhausted dead letter would get a
 * single attempt. So the jobs this adapter hands out retry a failed job with fresh
 * attempts, exactly as `streamkeeper dead-letters replay` does (replay-dead-letters.ts).
 */
class FreshRetryAdapter extends BullMQAdapter {
  override async getJob(id: string): Promise<Job | undefined> {
    const job = await super.getJob(id);
    return job && withFreshRetry(job);
  }

  override async getJobs(...args: Parameters<BullMQAdapter["getJobs"]>): Promise<Job[]> {
    return (await super.getJobs(...args)).map(withFreshRetry);
  }
}

function withFreshRetry(job: Job): Job {
  const retry = job.retry.bind(job);
  job.retry = (state = "failed", options = {}) =>
    retry(state, state === "failed" ? { resetAttemptsMade: true, resetAttemptsStarted: true, ...options } : options);
  return job;
}

function describe(queue: string): string {
  const route = routeOfQueue(queue);
  if (route !== undefined) return `deliveries to route ${route}; failed jobs are its dead letters (retry one to deliver it again)`;
  return queue === "reconcile" ? "reconcile requests: events recovered from the tenant's delivery history" : queue;
}
