import type { Logger } from "../logging/logger.js";
import type { OrphanedRoutes } from "./orphaned-routes.js";

/**
 * At start: one warning per route that is no longer configured but has events waiting,
 * naming it, how many, and the two ways out. Returns those routes. A failed look is logged
 * and the start goes on (the next start looks again).
 */
export async function reportOrphanedRoutes(orphans: OrphanedRoutes, logger: Logger): Promise<string[]> {
  try {
    const found: string[] = [];
    for (const route of await orphans.find()) {
      const waiting = await orphans.count(route);
      if (waiting === 0) continue;
      found.push(route);
      logger.warn(
        { route, waiting },
        `route ${route} is not configured any more, but ${waiting} event(s) wait for it (queued, retrying or dead letters) and nothing delivers them: hand them to a configured route with \`streamkeeper routes move ${route} <route>\`, or delete them with \`streamkeeper routes drop ${route} --yes\` (docs/operating.md, Removing a route)`,
      );
    }
    return found;
  } catch (error) {
    logger.warn({ err: error }, "could not look for routes removed with events still waiting; the next start looks again (GET /admin/routes looks now)");
    return [];
  }
}
