import type { Overview } from "./overview.js";

/** The archive's outbox this far behind is said: Postgres keeps up within seconds when it is well. */
const archiveLagSaidSeconds = 300;

/**
 * The operator view's first line (docs/operating.md, "The operator view"): what is wrong now,
 * one phrase each, the most urgent first (what loses or holds back events before what is
 * slow); empty when all is well. Read from the overview alone, so the page and the API agree.
 */
export function describeHealth(seen: Pick<Overview, "routes" | "streams" | "pull" | "archive" | "removedRoutes" | "unavailable">): string[] {
  const problems: string[] = [];
  if (seen.unavailable.length > 0) problems.push(`Redis does not answer: ${seen.unavailable.join(", ")} unknown`);
  for (const stream of seen.streams) if (stream.status === "disabled") problems.push(`stream ${stream.streamId} is disabled at the tenant: it sends and keeps nothing`);
  const { archive, pull } = seen;
  if (archive?.state === "down") problems.push(`archive down: ${archive.detail ?? "Postgres does not answer"}; events wait in the outbox`);
  else if (archive?.state === "up" && (archive.lagSeconds ?? 0) > archiveLagSaidSeconds) problems.push(`archive ${Math.round(archive.lagSeconds! / 60)} min behind`);
  if (pull && pull.state !== "off" && pull.lastError) problems.push(`pull failing: ${pull.lastError}`);
  for (const route of seen.routes) if (route.circuit === "open") problems.push(`route ${route.name}: circuit open, not sending`);
  for (const removed of seen.removedRoutes ?? []) if (removed.waiting > 0) problems.push(`removed route ${removed.name} holds ${removed.waiting} events (streamkeeper routes move or drop)`);
  for (const route of seen.routes) {
    // As the routes table judges it: the last 5 minutes, or the day when they had no live event.
    const { last5m, lastDay } = route.freshness;
    const missed = last5m?.verdict === "no_events" ? lastDay : last5m;
    if (missed?.verdict === "missed") problems.push(`route ${route.name}: freshness objective ${route.freshness.objectiveSeconds} s missed (${missed.missed} of ${missed.count} late)`);
  }
  for (const stream of seen.streams) if (stream.lastError) problems.push(`stream ${stream.streamId}: last sweep failed (${stream.lastError})`);
  return problems;
}
