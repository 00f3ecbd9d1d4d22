import type { CloudEvent, Origin } from "../events/cloud-event.js";

/** An event stored (event-store.ts): archived once, with how and when it came. */
export interface EventRecord {
  kind: "event";
  event: CloudEvent;
  origin: Origin;
  streamId?: string;
  /** ms since epoch when this service stored it: the event's arrival */
  receivedAt: number;
  /** the routes its type matched; none: unrouted */
  routes: string[];
  /** of those, the routes whose filter left it out (no job; archived as outcome `filtered`) */
  filtered?: string[];
}

/**
 * What one attempt came to; `moved` and `dropped`: the route's job left it (routes move,
 * routes drop: orphaned-routes.ts); `parked`: taken off the route's queue by `routes park`
 * (queue/park-waiting.ts), sent later by a replay; `filtered`: the route's filter or
 * testEvents kept the event off it at fan-out (no job ran).
 */
export type AttemptOutcome = "retry" | "delivered" | "dead_letter" | "stale" | "moved" | "dropped" | "parked" | "filtered";

/** One delivery attempt of one route (create-delivery-processor.ts), with what became of it. */
export interface AttemptRecord {
  kind: "attempt";
  eventId: string;
  /** the event's arrival (its partition) */
  receivedAt: number;
  route: string;
  /** unique per attempt: the job id and its attempt number */
  key: string;
  at: number;
  status?: number;
  error?: string;
  outcome: AttemptOutcome;
  replayId?: string;
}

/** A record of the archive's outbox (archive-outbox.ts): a tagged union, one JSON field per stream entry. */
export type ArchiveRecord = EventRecord | AttemptRecord;

/**
 * A record read back from the outbox, or why it cannot be one: a record the writer can
 * never handle is set aside (create-archive-writer.ts), never retried forever.
 */
export function parseArchiveRecord(text: string | undefined): ArchiveRecord | { poison: string } {
  if (text === undefined) return { poison: "the entry has no record field" };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { poison: "the record is not JSON" };
  }
  const record = value as Partial<ArchiveRecord> | null;
  if (record?.kind === "event") {
    const event = record.event as Partial<CloudEvent> | undefined;
    if (typeof event?.id !== "string" || typeof event.type !== "string") return { poison: "an event record without an event id and type" };
    if (typeof record.receivedAt !== "number" || !Array.isArray(record.routes) || typeof record.origin !== "string") return { poison: "an event record without its arrival, origin or routes" };
    return record as EventRecord;
  }
  if (record?.kind === "attempt") {
    if (typeof record.eventId !== "string" || typeof record.route !== "string" || typeof record.key !== "string") return { poison: "an attempt record without its event id, route or key" };
    if (typeof record.receivedAt !== "number" || typeof record.at !== "number" || typeof record.outcome !== "string") return { poison: "an attempt record without its times or outcome" };
    return record as AttemptRecord;
  }
  return { poison: "a record of no known kind" };
}
