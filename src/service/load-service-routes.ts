import { ConfigError, type Config } from "../config/config.js";
import type { Logger } from "../logging/logger.js";
import { loadRoutes, unmatchedPatternWarnings } from "../routes/load-routes.js";
import type { Route } from "../routes/route.js";

/** The downstream routes, or a ConfigError (exit 2) when there is none; a pattern matching no tenant type is warned. */
export async function loadServiceRoutes(config: Config, logger: Logger): Promise<Route[]> {
  const { env } = config;
  const routes = await loadRoutes(config);
  if (routes.length === 0) {
    // Every role: a receiver without routes would answer 202 for events it delivers nowhere.
    if (env.ROUTES_FILE !== undefined) throw new ConfigError([`ROUTES_FILE ${env.ROUTES_FILE} lists no route: add at least one (name, match, url); without one, every event would be stored and delivered nowhere`]);
    throw new ConfigError(["no downstream route: set ROUTES_FILE (a YAML or JSON file of routes) or DOWNSTREAM_URL (one route for every event); without one, every event would be stored and delivered nowhere"]);
  }
  for (const warning of unmatchedPatternWarnings(routes)) logger.warn(`${warning}; this pattern sends the route nothing (fix it in ROUTES_FILE)`);
  return routes;
}
