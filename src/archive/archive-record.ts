import type { CloudEvent, Origin } from "../events/cloud-event.js";
import { jsonText } from "../events/json-text.js";
import { entityOf } from "./entity-of.js";

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

/** A record of the archive's outbox (archive-outbox.ts): a tagged union. */
export type ArchiveRecord = EventRecord | AttemptRecord;

/**
 * An event record as the outbox holds it and the writer reads it: what the archive's row
 * needs, read from the event once by the process that stores it, and the event as JSON
 * text (`eventText`), which the writer compresses as it is, never parsing it again (the
 * parse and the second stringify were a tenth of the writer's work, docs/benchmarks.md).
 */
export interface OutboxEvent {
  kind: "event";
  id: string;
  type: string;
  stream: string | null;
  entity: string | null;
  origin: Origin;
  receivedAt: number;
  routes: string[];
  filtered?: string[];
  eventText: string;
}

/** What the writer archives: an event read from the outbox, or an attempt. */
export type WritableRecord = OutboxEvent | AttemptRecord;

/** Which arrival of an event a record is of (an id may arrive again, later), as one key: its id and its arrival. */
export function arrivalKeyOf(record: WritableRecord): string {
  return `${record.kind === "event" ? record.id : record.eventId}\n${record.receivedAt}`;
}

/** An event record as the outbox holds it (`outboxFields`) and the writer reads it. */
export function outboxEventOf(record: EventRecord): OutboxEvent {
  const { event } = record;
  return {
    kind: "event",
    id: event.id,
    type: event.type,
    stream: record.streamId ?? (typeof event.a0stream === "string" ? event.a0stream : null),
    entity: entityOf(event) ?? null,
    origin: record.origin,
    receivedAt: record.receivedAt,
    routes: record.routes,
    ...(record.filtered ? { filtered: record.filtered } : {}),
    eventText: jsonText(event),
  };
}

/**
 * A record's fields in its outbox entry: `r`, the record as JSON, and for an event `e`, the
 * event's JSON text apart (the record in `r` then without it).
 */
export function outboxFields(record: ArchiveRecord): string[] {
  if (record.kind !== "event") return ["r", jsonText(record)];
  const { eventText, ...fields } = outboxEventOf(record);
  return ["r", jsonText(fields), "e", eventText];
}

/**
 * Attempt records in one outbox entry: `a`, their JSON array. A worker's attempts of one
 * gather share an entry: an entry costs Redis and the writer per entry, not per byte
 * (`bench/outbox-entry-cost.ts`: ~5.5 µs of Redis and ~10 µs of the client each).
 */
export function outboxAttemptsFields(records: AttemptRecord[]): string[] {
  return ["a", `[${records.map(jsonText).join(",")}]`];
}

/**
 * The records of an outbox entry (its fields: `outboxFields`, `outboxAttemptsFields`), each
 * a record or why it cannot be one: a record the writer can never handle is set aside
 * (create-archive-writer.ts), never retried forever.
 */
export function parseOutboxEntry(fields: string[]): Array<WritableRecord | { poison: string }> {
  const attempts = fieldOf(fields, "a");
  if (attempts === undefined) return [parseArchiveRecord(fieldOf(fields, "r"), fieldOf(fields, "e"))];
  let values: unknown;
  try {
    values = JSON.parse(attempts);
  } catch {
    return [{ poison: "the entry's attempts are not JSON" }];
  }
  if (!Array.isArray(values) || values.length === 0) return [{ poison: "the entry's attempts are not a list of records" }];
  return values.map((value) => (isRecordLike(value) && value.kind === "attempt" ? recordOf(value) : { poison: "an entry's attempt is not an attempt record" }));
}

/**
 * A record read back from the outbox (its `r` and `e` fields), or why it cannot be one. An
 * event record of an earlier version (the event inside `r`) is read too.
 */
export function parseArchiveRecord(text: string | undefined, eventText?: string): WritableRecord | { poison: string } {
  if (text === undefined) return { poison: "the entry has no record field" };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { poison: "the record is not JSON" };
  }
  return recordOf(value, eventText);
}

type RecordLike = Partial<Omit<EventRecord, "kind">> & Partial<Omit<OutboxEvent, "kind">> & Partial<Omit<AttemptRecord, "kind">> & { kind?: string };

function isRecordLike(value: unknown): value is RecordLike {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function recordOf(value: unknown, eventText?: string): WritableRecord | { poison: string } {
  const record = isRecordLike(value) ? value : undefined;
  if (record?.kind === "event") {
    if (typeof record.receivedAt !== "number" || !Array.isArray(record.routes) || typeof record.origin !== "string") return { poison: "an event record without its arrival, origin or routes" };
    if (eventText !== undefined) {
      if (typeof record.id !== "string" || typeof record.type !== "string") return { poison: "an event record without an event id and type" };
      return { ...(record as Omit<OutboxEvent, "eventText">), eventText };
    }
    const event = record.event as Partial<CloudEvent> | undefined;
    if (typeof event?.id !== "string" || typeof event.type !== "string") return { poison: "an event record without an event id and type" };
    return outboxEventOf(record as EventRecord);
  }
  if (record?.kind === "attempt") {
    if (typeof record.eventId !== "string" || typeof record.route !== "string" || typeof record.key !== "string") return { poison: "an attempt record without its event id, route or key" };
    if (typeof record.receivedAt !== "number" || typeof record.at !== "number" || typeof record.outcome !== "string") return { poison: "an attempt record without its times or outcome" };
    return record as AttemptRecord;
  }
  return { poison: "a record of no known kind" };
}

function fieldOf(fields: string[], name: string): string | undefined {
  for (let index = 0; index + 1 < fields.length; index += 2) if (fields[index] === name) return fields[index + 1];
  return undefined;
}
