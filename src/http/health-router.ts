import express, { type Router } from "express";

/**
 * `GET /healthz` (the process answers, and the embedded Redis it relies on is not dead for
 * good: `alive`) and `GET /readyz` (Redis reachable and writable), the same on the public
 * and the admin port (README.md#http-surfaces: a worker has no public port).
 */
export function createHealthRouter(ready: () => Promise<boolean>, alive: () => boolean = () => true): Router {
  const router = express.Router();
  router.get("/healthz", (_req, res) => {
    if (!alive()) return void res.status(503).json({ status: "the embedded redis-server is down and could not be restarted (DATA_DIR/redis/redis.log says why)" });
    res.json({ status: "ok" });
  });
  router.get("/readyz", async (_req, res) => {
    const isReady = await ready();
    res.status(isReady ? 200 : 503).json({ status: isReady ? "ready" : "redis unavailable" });
  });
  return router;
}
