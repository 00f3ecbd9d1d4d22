import type { Config } from "../config.js";
import type { RedisClient } from "../queue/redis-connection.js";
import { loadRoutes } from "../routes/load-routes.js";
import type { Route } from "../routes/route.js";
import { publishedRoute, routeOf, type PublishedRoute } from "../service-config/service-config.js";
import { readServiceConfig } from "./read-service-config.js";

/**
 * The routes a command queues for: the running service's (dead-letters, the in-process
 * reconcile worker), never the shell's own when they differ, since jobs for a route the
 * service does not have are consumed by nothing (issue 18). A shell that disagrees is told
 * so in one line; with no service configuration, the shell's routes, also said in one line.
 */
export async function routesForCommand(config: Config, redis: RedisClient, say: (line: string) => void = (line) => process.stderr.write(`${line}\n`)): Promise<Route[]> {
  const service = await readServiceConfig(config, { redis });
  const shellSet = config.env.ROUTES_FILE !== undefined || config.env.DOWNSTREAM_URL !== undefined;
  if (!service.config) {
    const own = await loadRoutes(config);
    if (own.length > 0) say(`note: ${service.why}; using this shell's routes (${own.map((route) => route.name).join(", ")})`);
    return own;
  }
  const published = service.config.routes;
  if (shellSet) {
    const own = await loadRoutes(config).catch(() => undefined);
    if (!own || fingerprint(own.map(publishedRoute)) !== fingerprint(published)) {
      // Names and origins only: a route URL's path or query may hold its secret.
      say(`note: this shell's ROUTES_FILE/DOWNSTREAM_URL differ from the service's routes; using the service's: ${published.map((route) => `${route.name} (${route.match.join(",")} -> ${route.url})`).join(", ") || "none"}`);
    }
  }
  return published.map(routeOf);
}

/** What must agree: names, patterns and full URLs (compared by their fingerprints, never shown). */
function fingerprint(routes: PublishedRoute[]): string {
  return JSON.stringify(
    routes
      .map((route) => [route.name, [...route.match].sort(), route.urlFingerprint])
      .sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
  );
}
