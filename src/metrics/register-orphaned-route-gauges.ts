import { Gauge } from "prom-client";
import { onScrape, registry } from "./registry.js";

export const routeOrphanedJobs = new Gauge({
  name: "streamkeeper_route_orphaned_jobs",
  help: "Events waiting for a route that is no longer configured (queued, retrying or dead letters), read at scrape time; 0 or absent normally",
  labelNames: ["route"] as const,
  registers: [registry],
});

/**
 * Makes `/metrics` count, at scrape time, the jobs of the removed routes this process found
 * at start (`routes()`); a route with none left is forgotten. Returns the removal.
 */
export function registerOrphanedRouteGauges(routes: () => string[], count: (route: string) => Promise<number>, forget: (route: string) => void): () => void {
  const unregister = onScrape(async () => {
    try {
      for (const route of routes()) {
        const waiting = await count(route);
        if (waiting > 0) routeOrphanedJobs.set({ route }, waiting);
        else {
          routeOrphanedJobs.remove({ route });
          forget(route);
        }
      }
      return true;
    } catch {
      return false;
    }
  });
  return () => {
    unregister();
    routeOrphanedJobs.reset();
  };
}
