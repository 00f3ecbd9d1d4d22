import { plainProblem } from "../errors/http-answer.js";
import type pg from "pg";
import { fromArchiveText, toArchiveText, toArchiveTextOrNull } from "./archive-text.js";
import { deliveredAttempts, deliveredOn } from "./first-deliveries.js";

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
  /** delivered, dead_letter, stale, filtered, retry, moved, dropped, parked, pending (no outcome yet) or unrouted */
  outcome?: string;
}

export const outcomes = ["delivered", "dead_letter", "stale", "filtered", "retry", "moved", "dropped", "parked", "pending", "unrouted"] as const;

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
  delivered: string | null;
  /** each route's latest attempt of the rows of attempts: its outcome and time (ISO 8601) */
  outcomes: Record<string, [outcome: string, at: string]> | null;
}

/** A type filter as a LIKE pattern: `*` any run of characters, `%` and `_` taken literally. */
export function typePattern(type: string): string {
  return type.replace(/[\\%_]/g, (c) => `\\${c}`).replaceAll("*", "%");
}

/**
 * The outcome filter of search and replay, over the events row `e`: the parameter `outcome`
 * (`$n`: NULL for any), on the route of the parameter `route` (NULL: on any route).
 */
export function outcomeMatches(outcome: string, route: string): string {
  return `(${outcome}::text IS NULL
       OR (${outcome} = 'unrouted' AND cardinality(e.routes) = 0)
       OR (${outcome} = 'pending' AND NOT EXISTS (SELECT 1 FROM attempts a WHERE a.arrived_at = e.arrived_at AND a.event_id = e.id AND (${route}::text IS NULL OR a.route = ${route})) AND NOT ${deliveredOn(route)} AND cardinality(e.routes) > 0)
       OR (${outcome} = 'delivered' AND ${deliveredOn(route)})
       OR EXISTS (SELECT 1 FROM attempts a WHERE a.arrived_at = e.arrived_at AND a.event_id = e.id AND a.outcome = ${outcome} AND (${route}::text IS NULL OR a.route = ${route})))`;
}

/**
 * The row `e` has the id of the parameter (`$n`, not NULL): through its index, a hash of the
 * id (migration 007), then the id itself.
 */
export function idIs(id: string): string {
  return `(hashtext(e.id) = hashtext(${id}) AND e.id = ${id})`;
}

/** The row `e` is of the entity of the parameter (`$n`, not NULL): as `idIs`. */
export function entityIs(entity: string): string {
  return `(hashtext(e.entity) = hashtext(${entity}) AND e.entity = ${entity})`;
}

/** The events matching a filter, newest first, a keyset page at a time. Parameters: $1 id … $8 outcome, $9 after time, $10 after id, $11 limit + 1. */
export const eventsMatchingSql = `
SELECT e.arrived_at, e.id, e.type, e.origin, e.stream, e.entity, e.failed_first, e.routes, e.erased_at, e.delivered,
  (SELECT jsonb_object_agg(o.route, jsonb_build_array(o.outcome, o.at)) FROM (
     SELECT DISTINCT ON (a.route) a.route, a.outcome, a.at FROM attempts a
     WHERE a.arrived_at = e.arrived_at AND a.event_id = e.id
     ORDER BY a.route, a.at DESC, (a.outcome = 'retry')) o) AS outcomes
FROM events e
WHERE ($1::text IS NULL OR ${idIs("$1")})
  AND ($2::text IS NULL OR e.type LIKE $2)
  AND ($3::text IS NULL OR ${entityIs("$3")})
  AND ($4::text IS NULL OR e.stream = $4)
  AND ($5::timestamptz IS NULL OR e.arrived_at >= $5)
  AND ($6::timestamptz IS NULL OR e.arrived_at < $6)
  AND ($7::text IS NULL OR $7 = ANY (e.routes) OR EXISTS (SELECT 1 FROM attempts a WHERE a.arrived_at = e.arrived_at AND a.event_id = e.id AND a.route = $7))
  AND ${outcomeMatches("$8", "$7")}
  AND ($9::timestamptz IS NULL OR (e.arrived_at <= $9 AND (e.arrived_at, e.id) < ($9, $10)))  -- the first half an index bound: the search indexes end at arrived_at
ORDER BY e.arrived_at DESC, e.id DESC
LIMIT $11`;

/** The parameters of eventsMatchingSql, typed at the one place that runs it. */
export function eventsMatchingParams(filter: EventFilter, limit: number, after?: { at: number; id: string }): unknown[] {
  const time = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());
  // Names and ids as the archive stores them (archive-text.ts); the cursor's id is stored already.
  return [
    toArchiveTextOrNull(filter.id),
    filter.type === undefined ? null : typePattern(filter.type),
    toArchiveTextOrNull(filter.entity),
    toArchiveTextOrNull(filter.stream),
    time(filter.since),
    time(filter.until),
    toArchiveTextOrNull(filter.route),
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

/** Arrivals the archive can hold: from 1970 to the end of year 9999 (a cursor's time outside them is no cursor of ours). */
const latestTime = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

function parseCursor(after: string): { at: number; id: string } {
  const text = Buffer.from(after, "base64url").toString("utf8");
  const bar = text.indexOf("|");
  const at = Number(text.slice(0, bar));
  const id = text.slice(bar + 1);
  // The id as stored (archive-text.ts): never a NUL, never a lone surrogate.
  if (bar < 1 || !Number.isInteger(at) || at < 0 || at > latestTime || toArchiveText(id) !== id) throw new BadCursorError();
  return { at, id };
}

function toArchivedEvent(row: EventRow): ArchivedEvent {
  // Each route named as sent (archive-text.ts): `pending` until its first attempt, then its
  // latest attempt's, kept in the event's row (a first delivery) or a row of attempts.
  const outcomes: Record<string, string> = {};
  for (const route of row.routes) outcomes[fromArchiveText(route)] = "pending";
  const latest = new Map(deliveredAttempts(row.delivered, row.arrived_at).map((attempt) => [attempt.route, { outcome: "delivered", at: attempt.at.getTime() }]));
  for (const [route, [outcome, at]] of Object.entries(row.outcomes ?? {})) {
    if (Date.parse(at) > (latest.get(route)?.at ?? Number.NEGATIVE_INFINITY)) latest.set(route, { outcome, at: Date.parse(at) });
  }
  for (const [route, { outcome }] of latest) outcomes[fromArchiveText(route)] = outcome;
  return {
    id: fromArchiveText(row.id),
    time: row.arrived_at.toISOString(),
    type: fromArchiveText(row.type),
    ...(row.entity ? { entity: fromArchiveText(row.entity) } : {}),
    ...(row.stream ? { stream: fromArchiveText(row.stream) } : {}),
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
  const stored = toArchiveText(eventId);
  const event = (await pool.query<EventRow>(`SELECT arrived_at, id, type, origin, stream, entity, failed_first, routes, erased_at, delivered, NULL AS outcomes FROM events e WHERE ${idIs("$1")} ORDER BY arrived_at LIMIT 1`, [stored])).rows[0];
  if (!event) return undefined;
  const rows = (await pool.query<{ route: string; at: Date; status: number | null; error: string | null; outcome: string; replay_id: string | null }>(
    "SELECT route, at, status, error, outcome, replay_id FROM attempts WHERE arrived_at = $1 AND event_id = $2 ORDER BY at, outcome = 'retry' DESC",
    [event.arrived_at, stored],
  )).rows;
  // The first deliveries its row keeps, in time among the rest (stable: a retry at the same millisecond stays first).
  const kept = deliveredAttempts(event.delivered, event.arrived_at).map((attempt) => ({ ...attempt, error: null, outcome: "delivered", replay_id: null }));
  const attempts = [...rows, ...kept]
    .sort((a, b) => a.at.getTime() - b.at.getTime())
    .map((attempt) => ({ ...attempt, route: fromArchiveText(attempt.route), error: attempt.error === null ? null : fromArchiveText(attempt.error) }));
  const routes = [...new Set([...event.routes.map(fromArchiveText), ...attempts.map((attempt) => attempt.route)])];
  return {
    type: fromArchiveText(event.type),
    arrival: { at: event.arrived_at.toISOString(), origin: event.origin, failedFirst: event.failed_first, ...(event.stream ? { stream: fromArchiveText(event.stream) } : {}), ...(event.entity ? { entity: fromArchiveText(event.entity) } : {}) },
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
