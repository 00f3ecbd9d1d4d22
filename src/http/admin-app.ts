import express, { type NextFunction, type Request, type Response, type Router } from "express";
import type { Logger } from "../logging/logger.js";
import { registry } from "../metrics/registry.js";
import { adminAuth } from "./admin-auth.js";
import { createDashboardAssets } from "./dashboard-assets.js";
import { createHealthRouter } from "./health-router.js";
import { sendErrorProblem, sendProblem } from "./problem.js";
import { refuseCrossSite } from "./refuse-cross-site.js";
import { unreadableBody } from "./unreadable-body.js";

export interface AdminDeps {
  ready(): Promise<boolean>;
  /** False while the embedded Redis is dead and could not be restarted: /healthz fails. */
  alive?(): boolean;
  adminToken?: string;
  /** ADMIN_PREVIOUS_TOKEN: also accepted while set. */
  adminPreviousToken?: string;
  logger: Logger;
  /** What this service knows of one event, or undefined when it knows nothing. */
  describeEvent?(eventId: string): Promise<unknown>;
  /** Further routers under /admin (reconcile API, queue dashboard), behind the admin login. */
  routers?: Router[];
}

/**
 * The internal surface on ADMIN_PORT: metrics and probes without auth (bind it to an
 * internal interface), everything under /admin behind ADMIN_TOKEN.
 */
export function createAdminApp(deps: AdminDeps) {
  const app = express();
  app.disable("x-powered-by");

  app.get("/metrics", async (_req, res) => {
    res.type(registry.contentType).send(await registry.metrics());
  });
  app.use(createHealthRouter(deps.ready, deps.alive));

  // The queue dashboard's scripts and translations: the same in every install, no login (dashboard-assets.ts).
  app.use(createDashboardAssets());
  const admin = express.Router();
  admin.use(refuseCrossSite);
  admin.use(adminAuth(deps.adminToken, deps.adminPreviousToken));
  admin.use(express.json({ limit: "2mb" }));
  admin.get("/events/:eventId", async (req, res) => {
    const description = await deps.describeEvent?.(req.params.eventId as string);
    if (description === undefined) return sendProblem(res, 404, `no event ${req.params.eventId} is known here (ids are kept for DEDUPE_TTL_SECONDS)`);
    res.json(description);
  });
  for (const router of deps.routers ?? []) admin.use(router);
  app.use("/admin", admin);

  app.use((req, res) => sendProblem(res, 404, `no route for ${req.method} ${req.path}`));
  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    if (sendErrorProblem(res, error)) return;
    // The router's own 400: a path parameter that does not percent-decode (an id with a bare %).
    if (error instanceof URIError) return sendProblem(res, 400, "the path is not valid percent-encoding: encode each id in it as UTF-8 (encodeURIComponent), a % itself as %25");
    const unreadable = unreadableBody(error);
    if (unreadable) return sendProblem(res, unreadable.status, unreadable.detail);
    deps.logger.error({ err: error, path: req.path }, "admin request failed");
    sendProblem(res, 503, "the request could not be served right now; retry later", { "Retry-After": "1" });
  });
  return app;
}
