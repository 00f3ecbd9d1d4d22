import express, { type Router } from "express";
import type { Logger } from "../logging/logger.js";

/**
 * Logs every write asked of the admin API (retry, replay, reconcile, connect, from the
 * operator view or any other client) with what was asked, once the login passed and
 * before it is served: docs/operating.md, "Operator view". Mounted before the other
 * admin routers. Bodies hold ids, routes, times and URLs, never a secret.
 */
export function auditAdminWrites(logger: Logger): Router {
  const router = express.Router();
  router.use((req, _res, next) => {
    // POST /reconcile/outcomes is a read (a waiting CLI asks it every second), not a write.
    const write = req.method !== "GET" && req.method !== "HEAD" && req.method !== "OPTIONS" && req.path !== "/reconcile/outcomes";
    if (write) logger.info({ method: req.method, path: req.originalUrl, asked: summarized(req.body) }, "admin write asked");
    next();
  });
  return router;
}

/** The body as asked, a long list of ids as its count and first few: 10,000 ids would make one log line of 300 KB. */
function summarized(body: unknown): unknown {
  if (body === undefined || body === null || typeof body !== "object" || Array.isArray(body)) return body ?? null;
  return Object.fromEntries(
    Object.entries(body).map(([key, value]) => [key, Array.isArray(value) && value.length > 20 ? { count: value.length, first: value.slice(0, 5) } : value]),
  );
}
