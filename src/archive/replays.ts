import { plainProblem } from "../errors/http-answer.js";
import { randomUUID } from "node:crypto";
import { windowProblem } from "./window-problem.js";
import type pg from "pg";
import { oldestKept } from "./archive-partitions.js";
import { entityIs, outcomeMatches, typePattern } from "./archive-queries.js";
import { toArchiveTextOrNull } from "./archive-text.js";

/** What a replay sends again (`POST /admin/replays`, README.md#the-archive-search-timelines-replay-erasure). */
export interface ReplayRequest {
  route: string;
  /** arrival window, ms */
  since: number;
  until?: number;
  type?: string;
  entity?: string;
  stream?: string;
  /** only events with this outcome on the route, as search takes it (`parked`: what `routes park` took off the queue) */
  outcome?: string;
  /** events queued per second at most; none: as fast as the route takes them */
  rate?: number;
  dryRun?: boolean;
}

export type ReplayState = "running" | "done" | "cancelled" | "failed";

export interface ReplayStatus {
  replayId: string;
  route: string;
  state: ReplayState;
  matched: number;
  sent: number;
  /** erased payloads, never sent */
  skipped: number;
  /** events the route as configured when the replay ran leaves out (its match, filter, testEvents), never sent */
  filtered: number;
  delivered: number;
  failed: number;
  since: string;
  until?: string;
  startedAt: string;
  /** when it ended (done, cancelled or failed) */
  endedAt?: string;
  /** Running, but waiting since then for the archive to catch up with its window (events still in its outbox: archive_lag_seconds). */
  waitingForArchiveSince?: string;
}

interface ReplayRow {
  id: string;
  route: string;
  state: ReplayState;
  matched: number;
  sent: number;
  skipped: number;
  filtered: number;
  filter: ReplayFilter;
  waiting_since: Date | null;
  created_at: Date;
  updated_at: Date;
  delivered: string;
  failed: string;
}

/** A replay's row with its delivered and failed counts, read from its archived attempts (the index attempts_by_replay). */
const selectReplays = `SELECT r.id, r.route, r.state, r.matched, r.sent, r.skipped, r.filtered, r.filter, r.waiting_since, r.created_at, r.updated_at,
   (SELECT count(DISTINCT a.event_id) FROM attempts a WHERE a.replay_id = r.id AND a.outcome = 'delivered') AS delivered,
   (SELECT count(DISTINCT a.event_id) FROM attempts a WHERE a.replay_id = r.id AND a.outcome IN ('dead_letter', 'stale')) AS failed
 FROM replays r`;

function statusOf(row: ReplayRow): ReplayStatus {
  return {
    replayId: row.id,
    route: row.route,
    state: row.state,
    matched: row.matched,
    sent: row.sent,
    skipped: row.skipped,
    filtered: row.filtered,
    delivered: Number(row.delivered),
    failed: Number(row.failed),
    since: row.filter.since,
    ...(row.filter.until ? { until: row.filter.until } : {}),
    startedAt: row.created_at.toISOString(),
    ...(row.state === "running" ? {} : { endedAt: row.updated_at.toISOString() }),
    ...(row.state === "running" && row.waiting_since ? { waitingForArchiveSince: row.waiting_since.toISOString() } : {}),
  };
}

/** A request the caller must change (a 400), said in its words. */
export class ReplayRefusedError extends Error {
  readonly problemType = plainProblem;
  constructor(message: string, readonly status: 400 | 404 | 409 = 400) {
    super(message);
    this.name = "ReplayRefusedError";
  }

  get httpStatus(): number {
    return this.status;
  }
}

/** The stored filter of a replay, as replay-runner.ts reads it. */
export interface ReplayFilter {
  since: string;
  until?: string;
  type?: string;
  entity?: string;
  stream?: string;
  outcome?: string;
  rate?: number;
}

/** The filter part shared by the count and the runner's pages: $1 since, $2 until, $3 type pattern, $4 entity, $5 stream, $6 outcome on $7 the route. */
export const replayWindowWhere = `
e.arrived_at >= $1 AND ($2::timestamptz IS NULL OR e.arrived_at < $2)
AND ($3::text IS NULL OR e.type LIKE $3) AND ($4::text IS NULL OR ${entityIs("$4")}) AND ($5::text IS NULL OR e.stream = $5)
AND ${outcomeMatches("$6", "$7")}`;

export function replayWindowParams(route: string, filter: ReplayFilter): unknown[] {
  return [filter.since, filter.until ?? null, filter.type === undefined ? null : typePattern(filter.type), toArchiveTextOrNull(filter.entity), toArchiveTextOrNull(filter.stream), filter.outcome ?? null, toArchiveTextOrNull(route)];
}

/**
 * Starts, reads and cancels replays (the rows of `replays`); replay-runner.ts sends them.
 * One running replay per route (a unique index), so a second is refused with 409.
 */
export function createReplays(deps: { pool: pg.Pool; routes: string[]; retentionDays: number; now?: () => number }) {
  const { pool } = deps;
  const now = deps.now ?? Date.now;

  /** How many archived events a replay's window holds, and how many of them are erased. */
  const countMatching = async (route: string, filter: ReplayFilter) => {
    const row = (await pool.query<{ matched: string; erased: string }>(`SELECT count(*) AS matched, count(*) FILTER (WHERE e.payload IS NULL) AS erased FROM events e WHERE ${replayWindowWhere}`, replayWindowParams(route, filter))).rows[0]!;
    return { matched: Number(row.matched), erased: Number(row.erased) };
  };

  return {
    async start(request: ReplayRequest): Promise<{ replayId?: string; matched: number; erased: number; dryRun: boolean }> {
      if (!deps.routes.includes(request.route)) {
        throw new ReplayRefusedError(`no route named ${request.route}; the routes are ${deps.routes.join(", ") || "none"}`);
      }
      const kept = oldestKept(now(), deps.retentionDays);
      if (request.since < kept) {
        throw new ReplayRefusedError(`since ${new Date(request.since).toISOString()} is older than the archive keeps: it holds events from ${new Date(kept).toISOString()} on (ARCHIVE_RETENTION_DAYS=${deps.retentionDays}); give a later since`);
      }
      const empty = request.until === undefined ? undefined : windowProblem(request.since, request.until);
      if (empty) throw new ReplayRefusedError(empty);
      // The window ends when the replay starts at the latest (without until, or with one
      // still to come): what arrives later is live, not replayed.
      const startedAt = now();
      if (request.since >= startedAt) throw new ReplayRefusedError(`since ${new Date(request.since).toISOString()} is not in the past: give a since before now`);
      const filter: ReplayFilter = {
        since: new Date(request.since).toISOString(),
        until: new Date(Math.min(request.until ?? startedAt, startedAt)).toISOString(),
        ...(request.type === undefined ? {} : { type: request.type }),
        ...(request.entity === undefined ? {} : { entity: request.entity }),
        ...(request.stream === undefined ? {} : { stream: request.stream }),
        ...(request.outcome === undefined ? {} : { outcome: request.outcome }),
        ...(request.rate === undefined ? {} : { rate: request.rate }),
      };
      const { matched, erased } = await countMatching(request.route, filter);
      if (request.dryRun) return { matched, erased, dryRun: true };
      const replayId = `rpl_${randomUUID().replaceAll("-", "")}`;
      try {
        await pool.query("INSERT INTO replays (id, route, filter, state, matched) VALUES ($1, $2, $3, 'running', $4)", [replayId, request.route, JSON.stringify(filter), matched]);
      } catch (error) {
        if ((error as { code?: string }).code !== "23505") throw error;
        const running = (await pool.query<{ id: string }>("SELECT id FROM replays WHERE route = $1 AND state = 'running'", [request.route])).rows[0];
        throw new ReplayRefusedError(`a replay to ${request.route} is running already (${running?.id ?? "just started"}): wait for it, or cancel it with DELETE /admin/replays/${running?.id ?? "<id>"}`, 409);
      }
      return { replayId, matched, erased, dryRun: false };
    },

    /** A replay's state and counts; delivered and failed come from its archived attempts. */
    async get(replayId: string): Promise<ReplayStatus | undefined> {
      const row = (await pool.query<ReplayRow>(`${selectReplays} WHERE r.id = $1`, [replayId])).rows[0];
      return row && statusOf(row);
    },

    /** Every replay, whoever started it (the view, a command, the API), newest first: at most `limit`. */
    async list(limit = 100): Promise<ReplayStatus[]> {
      return (await pool.query<ReplayRow>(`${selectReplays} ORDER BY r.created_at DESC, r.id LIMIT $1`, [limit])).rows.map(statusOf);
    },

    /** Stops a running replay (what it queued already is still delivered); false when none runs under that id. */
    async cancel(replayId: string): Promise<boolean> {
      const updated = await pool.query("UPDATE replays SET state = 'cancelled', updated_at = now() WHERE id = $1 AND state = 'running'", [replayId]);
      return (updated.rowCount ?? 0) > 0;
    },
  };
}

export type Replays = ReturnType<typeof createReplays>;
