import { Gauge } from "prom-client";
import { registry } from "./registry.js";

/** The reader of the process's service, set while it runs (one service per process). */
let read: (() => Promise<void>) | undefined;

export const routeOrphanedJobs = new Gauge({
  name: "streamkeeper_route_orphaned_jobs",
  help: "Events waiting for a route that is no longer configured (queued, retrying or dead letters), read at scrape time; absent normally",
  labelNames: ["route"] as const,
  registers: [registry],
  collect: function () {
    return read?.();
  },
});

/**
 * Makes `/metrics` count, at scrape time, the jobs of the removed routes this process found
 * at start (`routes()`); a route with none left is forgotten. A Redis that does not answer
 * leaves the last values (redis_up says why). Returns the removal.
 */
export function registerOrphanedRouteGauges(routes: () => string[], count: (route: string) => Promise<number>, forget: (route: string) => void): () => void {
  const reader = async () => {
    try {
      for (const route of routes()) {
        const waiting = await count(route);
        if (waiting > 0) routeOrphanedJobs.set({ route }, waiting);
        else {
          routeOrphanedJobs.remove({ route });
          forget(route);
        }
      }
    } catch {
      // Redis away: streamkeeper_redis_up says so.
    }
  };
  read = reader;
  return () => {
    if (read === reader) read = undefined;
    routeOrphanedJobs.reset();
  };
}
