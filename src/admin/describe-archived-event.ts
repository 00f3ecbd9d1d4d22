import { timelineOfEvent, type Timeline } from "../archive/archive-queries.js";
import type { RunningArchive } from "../archive/start-archive.js";
import type { Logger } from "../logging/logger.js";
import { describeEvent, type EventDescription } from "./describe-event.js";

export type ArchivedEventDescription = (EventDescription | { eventId: string; type: string }) & {
  /** from the archive: arrival, then each route's attempts and outcome */
  timeline?: Timeline;
  /** set when the archive could not be read now */
  timelineUnavailable?: string;
};

/**
 * `GET /admin/events/:eventId` with the archive on: what Redis knows (describe-event.ts)
 * plus the archive's timeline. An event older than DEDUPE_TTL_SECONDS is known to the
 * archive alone; an archive that does not answer leaves the rest of the answer whole.
 */
export async function describeArchivedEvent(
  eventId: string,
  deps: Parameters<typeof describeEvent>[1] & { archive: RunningArchive; logger: Logger },
): Promise<ArchivedEventDescription | undefined> {
  const [known, timeline] = await Promise.all([
    describeEvent(eventId, deps),
    timelineOfEvent(deps.archive.pool, eventId).catch((error: unknown) => {
      deps.logger.warn({ err: error, eventId }, "archive: the timeline of an event could not be read; answering without it");
      return "unavailable" as const;
    }),
  ]);
  if (timeline === "unavailable") return known && { ...known, timelineUnavailable: "the archive does not answer right now (Postgres); retry later" };
  if (!known && !timeline) return undefined;
  return { ...(known && timeline ? countsOfTimeline(known, timeline) : (known ?? { eventId, type: timeline!.type })), ...(timeline ? { timeline } : {}) };
}

/** Outcomes an attempt of a route's own delivery job ends with (not a replay's, not a move or drop). */
const attemptOutcomes = new Set(["retry", "delivered", "dead_letter"]);

/**
 * Redis's counts, raised to what the timeline shows: a delivered job kept no longer
 * (COMPLETED_JOB_RETENTION_*) answers 0 attempts, and replays of the archive are not in
 * the ledger's count, while the timeline has each of them. The two never disagree.
 */
function countsOfTimeline(known: EventDescription, timeline: Timeline): EventDescription {
  const archived = new Map(timeline.routes.map((route) => [route.route, route.attempts]));
  const routes = known.routes.map((delivery) => {
    const counted = (archived.get(delivery.route) ?? []).filter((attempt) => attempt.replayId === undefined && attemptOutcomes.has(attempt.outcome)).length;
    return counted > delivery.attempts ? { ...delivery, attempts: counted } : delivery;
  });
  const replays = new Set(timeline.routes.flatMap((route) => route.attempts.flatMap((attempt) => (attempt.replayId === undefined ? [] : [attempt.replayId])))).size;
  return { ...known, routes, arrival: { ...known.arrival, replays: Math.max(known.arrival.replays, replays) } };
}
