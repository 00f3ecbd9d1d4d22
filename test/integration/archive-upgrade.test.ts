import { readdir, readFile } from "node:fs/promises";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { maintainPartitions } from "../../src/archive/archive-partitions.js";
import { eventsMatching, timelineOfEvent } from "../../src/archive/archive-queries.js";
import { migrateArchive } from "../../src/archive/migrate-archive.js";
import { encodePayload } from "../../src/archive/payload-codec.js";
import { writeArchiveBatch } from "../../src/archive/write-archive-batch.js";
import { createPooledDatabase, type ArchiveDatabase } from "../helpers/archive-database.js";
import { userEvent } from "../helpers/fixtures.js";

const sqlDir = new URL("../../src/archive/sql/", import.meta.url);

/**
 * An archive written by the version before migration 007 (its primary key, text indexes,
 * every delivery a row of attempts), upgraded: what it held is still found and read the
 * same, and what is written afterwards keeps a delivery in its event's row.
 */
describe("archive: an upgrade over archived events", () => {
  let db: ArchiveDatabase;
  let pool: pg.Pool;
  beforeAll(async () => void ({ pool } = db = await createPooledDatabase(2)));
  afterAll(() => db?.drop());

  it("when an archive of migrations 1-6 with events and attempts is migrated, then search, the outcome filters and the timeline read them as before, and a new delivery goes into its event's row", async () => {
    // The schema as the version before left it, recorded as migrateArchive records it.
    await pool.query("CREATE TABLE archive_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())");
    for (const file of (await readdir(sqlDir)).filter((name) => /^00[1-6]-.+\.sql$/.test(name)).sort()) {
      await pool.query(await readFile(new URL(file, sqlDir), "utf8"));
      await pool.query("INSERT INTO archive_migrations (version, name) VALUES ($1, $2)", [Number.parseInt(file, 10), file]);
    }
    const now = Date.now();
    await maintainPartitions(pool, now, 30);
    const delivered = userEvent();
    const retried = userEvent();
    const at = new Date(now - 60_000);
    for (const event of [delivered, retried]) {
      await pool.query("INSERT INTO events (arrived_at, id, type, origin, stream, entity, failed_first, routes, payload) VALUES ($1, $2, 'user.updated', 'webhook', NULL, $3, false, ARRAY['crm'], $4)", [at, event.id, `user:${event.id}`, encodePayload(event)]);
    }
    await pool.query("INSERT INTO attempts (arrived_at, event_id, route, attempt_key, at, status, error, outcome) VALUES ($1, $2, 'crm', ':1', $3, 200, NULL, 'delivered'), ($1, $4, 'crm', ':1', $3, 503, 'the route answered 503', 'retry')", [at, delivered.id, new Date(now - 59_000), retried.id]);

    expect(await migrateArchive(pool)).toEqual([7]);
    expect(await db.query("SELECT conname FROM pg_constraint WHERE conname LIKE 'events%pkey'")).toEqual([]);

    expect((await eventsMatching(pool, { entity: `user:${delivered.id}` }, 10)).events.map((event) => [event.id, event.outcomes])).toEqual([[delivered.id, { crm: "delivered" }]]);
    expect((await eventsMatching(pool, { route: "crm", outcome: "retry" }, 10)).events.map((event) => event.id)).toEqual([retried.id]);
    expect((await timelineOfEvent(pool, delivered.id))?.routes).toEqual([{ route: "crm", outcome: "delivered", attempts: [{ at: new Date(now - 59_000).toISOString(), status: 200, outcome: "delivered" }] }]);

    const next = userEvent();
    const receivedAt = now - 1000;
    await writeArchiveBatch(pool, [
      { kind: "event", event: next, origin: "webhook", receivedAt, routes: ["crm"] },
      { kind: "attempt", eventId: next.id, receivedAt, route: "crm", key: `${next.id}:1`, at: receivedAt + 25, status: 204, outcome: "delivered" },
    ]);
    expect(await db.query("SELECT delivered FROM events WHERE id = $1", [next.id])).toEqual([{ delivered: "crm:25:204" }]);
    expect((await db.query<{ n: string }>("SELECT count(*) AS n FROM every_attempt WHERE outcome = 'delivered'"))[0]!.n).toBe("2");
  });
});
