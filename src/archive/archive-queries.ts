import { plainProblem } from "../http-answer.js";
import type pg from "pg";
import { checkOut } from "./check-out.js";

/** What `GET /admin/events` and `events search` filter on (README.md#the-archive-search-timelines-replay-erasure); every field optional. */
export interface EventFilter {
  id?: string;
  /** an event type, or a pattern with `*` (`user.*`) */
  type?: string;
  /** a user, organization or group id (entity-of.ts) */
  entity?: string;
  stream?: string;
  /** arrival from (inclusive), ms */
  since?: number;
  /** arrival before (exclusive), ms */
  until?: number;
  route?: string;
  /** delivered, dead_letter, stale, filtered, retry, pending (no outcome yet) or unrouted */
  outcome?: string;
}

export const outcomes = ["delivered", "dead_letter", "stale", "filtered", "retry", "pending", "unrouted"] as const;

export interface ArchivedEvent {
  id: string;
  /** ISO 8601 arrival */
  time: string;
  type: string;
  entity?: string;
  stream?: string;
  origin: string;
  failedFirst: boolean;
  erased: boolean;
  /** each route's outcome now: its last attempt's, `pending` before any */
  outcomes: Record<string, string>;
}

export interface EventPage {
  events: ArchivedEvent[];
  /** the `after` of the next page; absent on the last */
  next?: string;
}

interface EventRow {
  arrived_at: Date;
  id: string;
  type: string;
  origin: string;
  stream: string | null;
  entity: string | null;
  failed_first: boolean;
  routes: string[];
  erased_at: Date | null;
  outcomes: Record<string, string> | null;
}

/** A type filter as a LIKE pattern: `*` any run of characters, `%` and `_` taken literally. */
export function typePattern(type: string): string {
  return type.replace(/[\\%_]/g, (c) => `\\${c}`).replaceAll("*", "%");
}

/** The events matching a filter, newest first, a keyset page at a time. Parameters: $1 id … $8 outcome, $9 after time, $10 after id, $11 limit + 1. */
export const eventsMatchingSql = `
SELECT e.arrived_at, e.id, e.type, e.origin, e.stream, e.entity, e.failed_first, e.routes, e.erased_at,
  (SELECT jsonb_object_agg(o.route, o.outcome) FROM (
     SELECT DISTINCT ON (a.route) a.route, a.outcome FROM attempts a
     WHERE a.arrived_at = e.arrived_at AND a.event_id = e.id
     ORDER BY a.route, a.at DESC, (a.outcome = 'retry')) o) AS outcomes
FROM events e
WHERE ($1::text IS NULL OR e.id = $1)
  AND ($2::text IS NULL OR e.type LIKE $2)
  AND ($3::text IS NULL OR e.entity = $3)
  AND ($4::text IS NULL OR e.stream = $4)
  AND ($5::timestamptz IS NULL OR e.arrived_at >= $5)
  AND ($6::timestamptz IS NULL OR e.arrived_at < $6)
  AND ($7::text IS NULL OR $7 = ANY (e.routes) OR EXISTS (SELECT 1 FROM attempts a WHERE a.arrived_at = e.arrived_at AND a.event_id = e.id AND a.route = $7))
  AND ($8::text IS NULL
       OR ($8 = 'unrouted' AND cardinality(e.routes) = 0)
       OR ($8 = 'pending' AND NOT EXISTS (SELECT 1 FROM attempts a WHERE a.arrived_at = e.arrived_at AND a.event_id = e.id AND ($7::text IS NULL OR a.route = $7)) AND cardinality(e.routes) > 0)
       OR EXISTS (SELECT 1 FROM attempts a WHERE a.arrived_at = e.arrived_at AND a.event_id = e.id AND a.outcome = $8 AND ($7::text IS NULL OR a.route = $7)))
  AND ($9::timestamptz IS NULL OR (e.arrived_at <= $9 AND (e.arrived_at, e.id) < ($9, $10)))  -- the first half an index bound: the search indexes end at arrived_at
ORDER BY e.arrived_at DESC, e.id DESC
LIMIT $11`;

/** The parameters of eventsMatchingSql, typed at the one place that runs it. */
export function eventsMatchingParams(filter: EventFilter, limit: number, after?: { at: number; id: string }): unknown[] {
  const time = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());
  return [
    filter.id ?? null,
    filter.type === undefined ? null : typePattern(filter.type),
    filter.entity ?? null,
    filter.stream ?? null,
    time(filter.since),
    time(filter.until),
    filter.route ?? null,
    filter.outcome ?? null,
    after ? new Date(after.at).toISOString() : null,
    after?.id ?? null,
    limit + 1,
  ];
}

/** Search: which archived events match, newest first (`GET /admin/events`). */
export async function eventsMatching(pool: pg.Pool, filter: EventFilter, limit: number, after?: string): Promise<EventPage> {
  const cursor = after === undefined ? undefined : parseCursor(after);
  const rows = (await pool.query<EventRow>(eventsMatchingSql, eventsMatchingParams(filter, limit, cursor))).rows;
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    events: page.map(toArchivedEvent),
    ...(rows.length > limit && last ? { next: Buffer.from(`${last.arrived_at.getTime()}|${last.id}`).toString("base64url") } : {}),
  };
}

export class BadCursorError extends Error {
  readonly status = 400;
  readonly httpStatus = 400;
  readonly problemType = plainProblem;
  constructor() {
    super("after: give the `next` value of the previous page, unchanged");
  }
}

function parseCursor(after: string): { at: number; id: string } {
  const text = Buffer.from(after, "base64url").toString("utf8");
  const bar = text.indexOf("|");
  const at = Number(text.slice(0, bar));
  if (bar < 1 || !Number.isFinite(at)) throw new BadCursorError();
  return { at, id: text.slice(bar + 1) };
}

function toArchivedEvent(row: EventRow): ArchivedEvent {
  const outcomes: Record<string, string> = {};
  for (const route of row.routes) outcomes[route] = "pending";
  Object.assign(outcomes, row.outcomes ?? {});
  return {
    id: row.id,
    time: row.arrived_at.toISOString(),
    type: row.type,
    ...(row.entity ? { entity: row.entity } : {}),
    ...(row.stream ? { stream: row.stream } : {}),
    origin: row.origin,
    failedFirst: row.failed_first,
    erased: row.erased_at !== null,
    outcomes: row.routes.length === 0 && Object.keys(outcomes).length === 0 ? { "": "unrouted" } : outcomes,
  };
}

export interface Timeline {
  type: string;
  arrival: { at: string; origin: string; failedFirst: boolean; stream?: string; entity?: string };
  /** the payload was erased (an erasure request), with when */
  erasedAt?: string;
  routes: Array<{
    route: string;
    outcome: string;
    attempts: Array<{ at: string; status?: number; error?: string; outcome: string; replayId?: string }>;
  }>;
}

/** The timeline of one event: how it arrived, then each route's attempts and outcome. Undefined when it is not archived. */
export async function timelineOfEvent(pool: pg.Pool, eventId: string): Promise<Timeline | undefined> {
  const event = (await pool.query<EventRow>("SELECT arrived_at, id, type, origin, stream, entity, failed_first, routes, erased_at, NULL AS outcomes FROM events WHERE id = $1 ORDER BY arrived_at LIMIT 1", [eventId])).rows[0];
  if (!event) return undefined;
  const attempts = (await pool.query<{ route: string; at: Date; status: number | null; error: string | null; outcome: string; replay_id: string | null }>(
    "SELECT route, at, status, error, outcome, replay_id FROM attempts WHERE arrived_at = $1 AND event_id = $2 ORDER BY at, outcome = 'retry' DESC",
    [event.arrived_at, eventId],
  )).rows;
  const routes = [...new Set([...event.routes, ...attempts.map((attempt) => attempt.route)])];
  return {
    type: event.type,
    arrival: { at: event.arrived_at.toISOString(), origin: event.origin, failedFirst: event.failed_first, ...(event.stream ? { stream: event.stream } : {}), ...(event.entity ? { entity: event.entity } : {}) },
    ...(event.erased_at ? { erasedAt: event.erased_at.toISOString() } : {}),
    routes: routes.map((route) => {
      const own = attempts.filter((attempt) => attempt.route === route);
      return {
        route,
        outcome: own.at(-1)?.outcome ?? "pending",
        attempts: own.map((attempt) => ({
          at: attempt.at.toISOString(),
          ...(attempt.status === null ? {} : { status: attempt.status }),
          ...(attempt.error === null ? {} : { error: attempt.error }),
          outcome: attempt.outcome,
          ...(attempt.replay_id === null ? {} : { replayId: attempt.replay_id }),
        })),
      };
    }),
  };
}

/** Erasure: drops the payloads of an entity's archived events, keeping ids, types, times and outcomes. Resolves with how many it erased. */
export async function forgetEntity(pool: pg.Pool, entity: string, now = Date.now()): Promise<number> {
  const client = await checkOut(pool);
  try {
    await client.query("BEGIN");
    // The writers' lock (write-archive-batch.ts): no batch of the entity's events commits between these two statements.
    await client.query("SELECT pg_advisory_xact_lock(hashtext('streamkeeper archive writer'))");
    // Recorded first: an event of the entity still in the outbox is archived without its
    // payload. Its arrival time is the receiving service's clock, not Postgres's: the erasure
    // takes the later of Postgres's and this service's (the same clock when one process
    // receives and erases; processes apart are assumed in step), never moving back.
    const at = (await client.query<{ at: Date }>(
      "INSERT INTO erasures (entity, erased_at) VALUES ($1, GREATEST(now(), $2)) ON CONFLICT (entity) DO UPDATE SET erased_at = GREATEST(erasures.erased_at, now(), $2) RETURNING erased_at AS at",
      [entity, new Date(now)],
    )).rows[0]!.at;
    const erased = await client.query("UPDATE events SET payload = NULL, erased_at = $2 WHERE entity = $1 AND payload IS NOT NULL", [entity, at]);
    await client.query("COMMIT");
    return erased.rowCount ?? 0;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}
