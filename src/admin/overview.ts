import type { FreshnessWindow } from "../freshness/create-freshness-reader.js";
import type { LastHour } from "../freshness/read-last-hour.js";

/**
 * What `GET /admin/overview` answers (describe-overview.ts builds it, describe-health.ts
 * reads it for the health line, the operator view renders it).
 */

/** One queue's figures, as `streamkeeper_queue_jobs` and `_oldest_waiting_age_seconds` read them. */
export interface QueueFigures {
  waiting: number;
  prioritized: number;
  delayed: number;
  active: number;
  failed: number;
  oldestWaitingSeconds: number;
}

/** Events waiting for a route: queued, prioritized (recoveries, replays) and retrying; not those in flight. */
export function waitingOf(queue: QueueFigures): number {
  return queue.waiting + queue.prioritized + queue.delayed;
}

/** Where the pull stands (GET /admin/pull without its poison events). */
export interface PullOverview {
  state: "off" | "connecting" | "connected" | "waiting";
  offsetAt: string | null;
  lastEventAt: string | null;
  lastError: string | null;
}

/** `off`: ARCHIVE=off (or its Postgres could not start); `down`: its Postgres does not answer, or it is another database than the outbox's. */
export interface ArchiveOverview {
  state: "up" | "down" | "off";
  /** age of the oldest record waiting in the outbox; null when off or unknown */
  lagSeconds: number | null;
  /** why it is down or off, in words the page shows */
  detail: string | null;
}

/** `met`: at most 1% of live events later than the objective; `missed`: more. */
export type FreshnessVerdict = "met" | "missed" | "no_objective" | "no_events";

export interface RouteOverview {
  name: string;
  match: string[];
  ratePerSecond: number | null;
  /** what the route chooses and how it shapes the body (docs/routes.md): null where it has none */
  filter: Record<string, unknown> | null;
  testEvents: "deliver" | "drop";
  transform: string | null;
  deliveredPerMinute: number | null;
  /** jobs waiting, prioritized (recoveries, replays), delayed (retries) or in flight */
  backlog: number | null;
  /** the queued part of the backlog by lane (queue/lane.ts): live (no priority) and late (waiting behind live: late events, recoveries, replays) */
  lanes: { live: number; late: number } | null;
  oldestWaitingSeconds: number | null;
  circuit: "open" | "closed" | null;
  deadLetters: number | null;
  staleLastDay: number | null;
  freshness: {
    objectiveSeconds: number | null;
    last5m: (FreshnessWindow & { verdict: FreshnessVerdict }) | null;
    lastDay: (FreshnessWindow & { verdict: FreshnessVerdict }) | null;
  };
  lastHour: LastHour | null;
}

export interface StreamOverview {
  streamId: string;
  /** as last read from the tenant by the stream watch; null when not read (no watch, or not yet) */
  status: "enabled" | "disabled" | null;
  checkedAt: string | null;
  /** now minus the end of the last window the sweep read completely */
  sweepLagSeconds: number | null;
  lastRunAt: string | null;
  lastError: string | null;
  found: number | null;
  recovered: number | null;
  unrecovered: number | null;
}

export interface Overview {
  generatedAt: string;
  /** What is wrong now, one phrase each (describe-health.ts); empty when all is well. */
  health: string[];
  pull: PullOverview | null;
  archive: ArchiveOverview | null;
  removedRoutes: Array<{ name: string; waiting: number }> | null;
  sweep: { on: boolean; whyOff: string | null; streams: string[] | null; publicUrl: string | null };
  streams: StreamOverview[];
  routes: RouteOverview[];
  recovery: { reconcile: Omit<QueueFigures, "prioritized"> | null };
  /** the parts that could not be read now (Redis away): shown as unknown, not as zero */
  unavailable: string[];
}

