import express, { type Router } from "express";
import type { Logger } from "../logger.js";

/**
 * Logs every write asked of the admin API (retry, replay, reconcile, connect, from the
 * operator view or any other client) with what was asked, once the login passed and
 * before it is served: docs/operating.md, "Operator view". Mounted before the other
 * admin routers. Bodies hold ids, routes, times and URLs, never a secret.
 */
export function auditAdminWrites(logger: Logger): Router {
  const router = express.Router();
  router.use((req, _res, next) => {
    if (req.method !== "GET" && req.method !== "HEAD" && req.method !== "OPTIONS") {
      logger.info({ method: req.method, path: req.originalUrl, asked: req.body ?? null }, "admin write asked");
    }
    next();
  });
  return router;
}
