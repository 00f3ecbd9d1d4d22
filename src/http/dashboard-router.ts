import { createBullBoard } from "@bull-board/api";
import { BullMQAdapter } from "@bull-board/api/bullMQAdapter";
import { ExpressAdapter } from "@bull-board/express";
import type { Queue } from "bullmq";
import express, { type Router } from "express";
import { routeOfQueue } from "../queue/queue-names.js";

/** Where the admin app mounts its routers (admin-app.ts) and the dashboard below it. */
const basePath = "/admin/queues";

/**
 * The queue dashboard (CONTRACT.md "Admin surface": `/admin/queues`), bull-board over
 * every delivery queue and the reconcile queue. It has no login of its own: the admin
 * router's `adminAuth` runs before it, and a browser resends the Basic credentials for
 * the page, its assets and its API calls alike. Not read-only, so a dead letter (a failed
 * job of a `deliver-<route>` queue) can be retried from the page.
 */
export function createDashboardRouter(queues: Queue[]): Router {
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(basePath);
  createBullBoard({
    queues: queues.map((queue) => new BullMQAdapter(queue, { readOnlyMode: false, allowRetries: true, description: describe(queue.name) })),
    serverAdapter,
    options: { uiConfig: { boardTitle: "Streamkeeper", hideDocsLink: true, sortQueues: true } },
  });
  const router = express.Router();
  router.use("/queues", serverAdapter.getRouter() as Router);
  return router;
}

function describe(queue: string): string {
  const route = routeOfQueue(queue);
  if (route !== undefined) return `deliveries to route ${route}; failed jobs are its dead letters (retry one to deliver it again)`;
  return queue === "reconcile" ? "reconcile requests: events recovered from the tenant's delivery history" : queue;
}
