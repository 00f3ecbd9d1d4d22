import type pg from "pg";
import { checkOut } from "./check-out.js";
import { entityIs } from "./archive-queries.js";
import { toArchiveText } from "./archive-text.js";
import { beginDurable } from "./write-archive-batch.js";

export interface Forgotten {
  /** events whose payload this erasure dropped */
  erased: number;
}

/**
 * Erasure (an erasure request): drops the payloads of an entity's archived events and the
 * downstream error texts of their attempts (a downstream may echo the request in its
 * answer), keeping ids, types, times, statuses and outcomes. An UPDATE leaves the old row
 * versions in the table files until they are reused, so every partition it touched is
 * then rewritten (VACUUM FULL: new files holding live rows only; the old ones are
 * deleted), and nothing of the payloads stays readable in Postgres but its write-ahead log
 * and backups (README.md, Erasure). The rewrite locks each touched day a moment: the
 * archive writer waits (the outbox holds its records), the ack path and deliveries never.
 */
export async function forgetEntity(pool: pg.Pool, entity: string, now = Date.now()): Promise<Forgotten> {
  const stored = toArchiveText(entity);
  const client = await checkOut(pool);
  let touched: string[];
  let erased: number;
  let erasure: string;
  try {
    // Durable like the writer's batches (write-archive-batch.ts), and under its lock: no batch of the entity's events commits in between.
    await client.query(beginDurable);
    // Recorded first: an event of the entity still in the outbox is archived without its
    // payload. Its arrival time is the receiving service's clock, not Postgres's: the erasure
    // takes the later of Postgres's and this service's (the same clock when one process
    // receives and erases; processes apart are assumed in step), never moving back.
    const at = (await client.query<{ at: Date }>(
      "INSERT INTO erasures (entity, erased_at) VALUES ($1, GREATEST(now(), $2)) ON CONFLICT (entity) DO UPDATE SET erased_at = GREATEST(erasures.erased_at, now(), $2) RETURNING erased_at AS at",
      [stored, new Date(now)],
    )).rows[0]!.at;
    const events = await client.query<{ partition: string; payload_was: boolean }>(
      `WITH erased AS (UPDATE events e SET payload = NULL, erased_at = $2 WHERE ${entityIs("$1")} AND payload IS NOT NULL RETURNING id)
       SELECT e.tableoid::regclass::text AS partition, e.id IN (SELECT id FROM erased) AS payload_was FROM events e WHERE ${entityIs("$1")}`,
      [stored, at],
    );
    const attempts = await client.query<{ partition: string }>(
      `UPDATE attempts a SET error = NULL FROM events e
       WHERE ${entityIs("$1")} AND a.arrived_at = e.arrived_at AND a.event_id = e.id AND a.error IS NOT NULL
       RETURNING a.tableoid::regclass::text AS partition`,
      [stored],
    );
    const { xid } = (await client.query<{ xid: string }>("SELECT (pg_current_xact_id()::text::bigint % 4294967296)::text AS xid")).rows[0]!;
    await client.query("COMMIT");
    erasure = xid;
    erased = events.rows.filter((row) => row.payload_was).length;
    // Every partition holding the entity's events, not only those erased now: a forget asked
    // again after a rewrite failed (answered 503) rewrites them then.
    touched = [...new Set([...events.rows.map((row) => row.partition), ...attempts.rows.map((row) => row.partition)])];
  } catch (error) {
    client.release(error as Error);
    throw error;
  }
  try {
    // No time limit for the rewrite (ARCHIVE_STATEMENT_TIMEOUT_MS is for a statement of the
    // writer or a search); a partition's name comes from Postgres itself.
    await client.query("SET statement_timeout = 0");
    await untilNoSnapshotBefore(client, erasure);
    for (const partition of touched) await client.query({ text: `VACUUM (FULL) ${partition}`, query_timeout: 3_600_000 } as pg.QueryConfig);
    await client.query("RESET statement_timeout");
    client.release();
  } catch (error) {
    client.release(error as Error);
    throw error;
  }
  return { erased };
}

/**
 * Waits (up to `maxWaitMs`) until no other session of this database holds a snapshot taken
 * before the erasure committed: VACUUM FULL copies the row versions such a snapshot can still
 * see, the payloads among them (a writer's batch that began as the erasure held its lock
 * holds one). Sessions are short (a batch, a search under ARCHIVE_STATEMENT_TIMEOUT_MS).
 */
async function untilNoSnapshotBefore(client: pg.PoolClient, erasureXid: string, maxWaitMs = 10_000): Promise<void> {
  const deadline = Date.now() + maxWaitMs;
  for (;;) {
    const { older } = (await client.query<{ older: number }>(
      "SELECT count(*)::int AS older FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_xmin IS NOT NULL AND age(backend_xmin) >= age($1::xid)",
      [erasureXid],
    )).rows[0]!;
    if (older === 0 || Date.now() >= deadline) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
