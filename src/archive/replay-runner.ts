import type pg from "pg";
import type { Logger } from "../logging/logger.js";
import { replayDeliveries, replaysRunning } from "../metrics/archive-metrics.js";
import { replayPriority } from "../queue/delivery-job.js";
import type { DeliveryQueue, DeliveryQueues } from "../queue/delivery-queues.js";
import { addDeep } from "../queue/fan-out.js";
import { jobIdFor } from "../queue/job-id.js";
import type { CloudEvent, Origin } from "../events/cloud-event.js";
import { decodePayload } from "./payload-codec.js";
import { fromArchiveText } from "./archive-text.js";
import { replayWindowParams, replayWindowWhere, type ReplayFilter } from "./replays.js";
import { checkOut } from "./check-out.js";

export interface ReplayRunnerDeps {
  pool: pg.Pool;
  queues: DeliveryQueues;
  logger: Logger;
  /** How often running replays are looked for (one started elsewhere, or left by a crashed process). @defaultValue 1000 */
  pollMs?: number;
  /** Events per page and checkpoint; the next page is queued once fewer than half a page of prioritized jobs wait on the route. @defaultValue 50 */
  pageSize?: number;
  /** Until when the archive holds every event (archive-outbox.ts `archivedThrough`): a replay reads no further until it moves. @defaultValue every event is archived (no outbox) */
  archivedThrough?(): Promise<number>;
  /** Whether the route, as configured now, takes the event (its match, filter and testEvents: routes/route-chooser.ts). @defaultValue every event */
  selects?(route: string, event: CloudEvent): boolean;
}

interface EventRow {
  arrived_at: Date;
  id: string;
  origin: string;
  stream: string | null;
  payload: Buffer | null;
}

/**
 * Sends running replays (replays.ts): each is taken by one process at a time (a Postgres
 * session lock, released by a crash with the connection), read oldest first a page at a
 * time after its checkpoint, and queued on the route's queue below live and reconciled
 * events, as forced jobs (the route's "once" ledger is bypassed for this replay only), a
 * page at a time while less than half a page waits prioritized on the route, each
 * under a job id of the replay and the event: after a crash the page since the last
 * checkpoint is queued again and BullMQ ignores the jobs it has, so none is skipped nor
 * sent twice. What it does with an event it can never send, in one place: an erased
 * payload is counted `skipped` (`replay_deliveries_total{outcome="skipped_erased"}`) and
 * never sent; an unreadable one fails the replay, said in its `state` and the log. An event
 * the route as configured now leaves out (`selects`) is counted `filtered` and not sent: a
 * replay goes through the route as it is defined when it runs.
 * Events reach the archive out of order (a backlog after a Postgres outage), so a replay
 * reads only as far as the archive is complete (`archivedThrough`) and stops there, its
 * lock and connection released (the archive's writer needs the pool), to go on from its
 * checkpoint at a later look: none of its window is passed by while still in the outbox.
 */
export function createReplayRunner(deps: ReplayRunnerDeps) {
  const { pool, queues, logger } = deps;
  const pageSize = deps.pageSize ?? 50;
  const running = new Map<string, Promise<void>>();
  /** Replays said to be waiting for the archive (said once each). */
  const waitingSaid = new Set<string>();
  let closing = false;
  let timer: NodeJS.Timeout | undefined;

  const run = async (replayId: string) => {
    const client = await checkOut(pool);
    try {
      const locked = (await client.query<{ locked: boolean }>("SELECT pg_try_advisory_lock(hashtext('replay:' || $1)) AS locked", [replayId])).rows[0]?.locked;
      if (!locked) return;
      replaysRunning.inc();
      try {
        await send(client, replayId);
      } finally {
        replaysRunning.dec();
        await client.query("SELECT pg_advisory_unlock(hashtext('replay:' || $1))", [replayId]).catch(() => {});
      }
    } finally {
      client.release();
    }
  };

  const send = async (client: pg.PoolClient, replayId: string) => {
    const replay = (await client.query<{ route: string; filter: ReplayFilter; state: string; checkpoint_at: Date | null; checkpoint_id: string | null; created_at: Date }>(
      "SELECT route, filter, state, checkpoint_at, checkpoint_id, created_at FROM replays WHERE id = $1",
      [replayId],
    )).rows[0];
    if (!replay || replay.state !== "running") return;
    const { route, filter } = replay;
    // The window ends when the replay started at the latest (replays.ts); a row written
    // before that rule (no until, or one still to come) ends at its creation too, so it
    // never takes in live traffic. A minute's slack: until is the service's clock, the
    // creation Postgres's.
    const asked = filter.until === undefined ? Number.POSITIVE_INFINITY : Date.parse(filter.until);
    const until = asked > replay.created_at.getTime() + 60_000 ? replay.created_at.getTime() : asked;
    const queue = queues.forRoute(route);
    let checkpoint = replay.checkpoint_at ? { at: replay.checkpoint_at, id: replay.checkpoint_id! } : undefined;
    if (checkpoint && !waitingSaid.has(replayId)) logger.info({ replayId, route, checkpoint: checkpoint.at.toISOString() }, "replay resumes from its checkpoint");
    while (!closing) {
      // A bounded backlog: a cancel leaves little queued, and a crash resumes from a recent checkpoint.
      while (!closing && (await queue.getPrioritizedCount()) >= pageSize / 2) await new Promise((ok) => setTimeout(ok, 100));
      if (closing) return;
      // A cancel that came while it waited queues nothing more.
      if (!(await stillRunning(client, replayId))) return cancelled(replayId, route);
      const through = deps.archivedThrough ? await deps.archivedThrough() : Number.POSITIVE_INFINITY;
      const complete = through >= until;
      const params = [...replayWindowParams(route, filter), checkpoint?.at ?? null, checkpoint?.id ?? null, pageSize, new Date(Math.min(through, until))];
      const page = (await client.query<EventRow>(
        `SELECT e.arrived_at, e.id, e.origin, e.stream, e.payload FROM events e WHERE ${replayWindowWhere}
         AND ($8::timestamptz IS NULL OR (e.arrived_at >= $8 AND (e.arrived_at, e.id) > ($8, $9)))
         AND e.arrived_at < $11 ORDER BY e.arrived_at, e.id LIMIT $10`,
        params,
      )).rows;
      if (page.length === 0 && !complete) return waitForArchive(client, replayId, route, through);
      if (page.length === 0) {
        // `matched` counted what the archive held at the start: it grows to what came in late.
        await client.query("UPDATE replays SET state = 'done', matched = GREATEST(matched, sent + skipped + filtered), waiting_since = NULL, updated_at = now() WHERE id = $1 AND state = 'running'", [replayId]);
        waitingSaid.delete(replayId);
        logger.info({ replayId, route }, "replay queued every event of its window");
        return;
      }
      const { sent, skipped, filtered } = await queueRows(page, { queue, route, replayId, selects: deps.selects });
      const last = page.at(-1)!;
      checkpoint = { at: last.arrived_at, id: last.id };
      const updated = await client.query<{ state: string }>(
        "UPDATE replays SET sent = sent + $2, skipped = skipped + $3, filtered = filtered + $6, checkpoint_at = $4, checkpoint_id = $5, waiting_since = NULL, updated_at = now() WHERE id = $1 RETURNING state",
        [replayId, sent, skipped, checkpoint.at, checkpoint.id, filtered],
      );
      if (skipped > 0) logger.info({ replayId, route, skipped }, "replay: events whose payload was erased are skipped, never sent");
      if (filtered > 0) logger.info({ replayId, route, filtered }, "replay: events the route leaves out now (its match, filter or testEvents) are skipped as filtered, never sent");
      if (updated.rows[0]?.state !== "running") return cancelled(replayId, route);
      if (filter.rate) await new Promise((ok) => setTimeout(ok, (page.length / filter.rate!) * 1000));
    }
  };

  // Said once in the log, and in its status (GET /admin/replays/:id) until a page is read.
  const waitForArchive = async (client: pg.PoolClient, replayId: string, route: string, through: number) => {
    await client.query("UPDATE replays SET waiting_since = COALESCE(waiting_since, now()) WHERE id = $1 AND state = 'running'", [replayId]);
    if (!waitingSaid.has(replayId)) logger.info({ replayId, route, archivedThrough: new Date(through).toISOString() }, "replay waits for the archive to catch up with its window (events still in the outbox: archive_lag_seconds); it goes on from its checkpoint once they are in");
    waitingSaid.add(replayId);
  };
  const cancelled = (replayId: string, route: string) => logger.info({ replayId, route }, "replay cancelled: no further events are queued");

  const look = async () => {
    try {
      const ids = (await pool.query<{ id: string }>("SELECT id FROM replays WHERE state = 'running'")).rows.map((row) => row.id);
      for (const id of ids) {
        if (running.has(id) || closing) continue;
        const job = run(id)
          .catch(async (error: unknown) => {
            if (closing) return;
            logger.error({ err: error, replayId: id }, "replay failed; its state says so");
            await pool.query("UPDATE replays SET state = 'failed', reason = $2, updated_at = now() WHERE id = $1 AND state = 'running'", [id, (error as Error).message]).catch(() => {});
          })
          .finally(() => running.delete(id));
        running.set(id, job);
      }
    } catch (error) {
      logger.debug({ err: error }, "replays could not be looked for (Postgres away); trying again");
    }
  };

  const schedule = () => {
    if (closing) return;
    timer = setTimeout(() => void look().finally(schedule), deps.pollMs ?? 1000);
  };
  void look().finally(schedule);

  return {
    /** Looks for running replays now (a replay just started here). */
    wake: () => void look(),
    async close() {
      closing = true;
      clearTimeout(timer);
      await Promise.all(running.values());
    },
  };
}

async function stillRunning(client: pg.PoolClient, replayId: string): Promise<boolean> {
  return (await client.query<{ state: string }>("SELECT state FROM replays WHERE id = $1", [replayId])).rows[0]?.state === "running";
}

/**
 * One page of a replay queued on its route, each event as a forced job of the replay: what
 * it can never send (an erased payload) and what the route leaves out now are counted, not
 * queued.
 */
async function queueRows(page: EventRow[], { queue, route, replayId, selects }: { queue: DeliveryQueue; route: string; replayId: string; selects: ReplayRunnerDeps["selects"] }) {
  const counts = { sent: 0, skipped: 0, filtered: 0 };
  await Promise.all(
    page.map(async (row) => {
      if (!row.payload) {
        counts.skipped += 1;
        replayDeliveries.inc({ route, outcome: "skipped_erased" });
        return;
      }
      const event = decodePayload(row.payload);
      if (selects && !selects(route, event)) {
        counts.filtered += 1;
        replayDeliveries.inc({ route, outcome: "filtered" });
        return;
      }
      const data = { event, origin: row.origin as Origin, streamId: row.stream === null ? undefined : fromArchiveText(row.stream), receivedAt: row.arrived_at.getTime(), force: true, replayId };
      await addDeep(data, (jobData) => queue.add(event.type, jobData, { jobId: `${jobIdFor(event.id)}-${replayId}`, priority: replayPriority }));
      counts.sent += 1;
    }),
  );
  return counts;
}
