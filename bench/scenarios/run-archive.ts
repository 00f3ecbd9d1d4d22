import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { maintainPartitions } from "../../src/archive/archive-partitions.js";
import { eventsMatchingParams, eventsMatchingSql } from "../../src/archive/archive-queries.js";
import { migrateArchive } from "../../src/archive/migrate-archive.js";
import { encodePayload } from "../../src/archive/payload-codec.js";
import { startPostgresServer, systemPostgresBinDir } from "../../src/archive/postgres-server.js";
import { writeArchiveBatch } from "../../src/archive/write-archive-batch.js";
import type { CloudEvent } from "../../src/events/cloud-event.js";
import { freePort } from "../../src/redis/redis-server.js";
import { percentile, round } from "../lib/percentile.js";

export interface ArchiveResults {
  /** ms from spawning postgres on an existing data folder to its first accepted connection */
  postgresStartMs: number;
  /** ms of initdb + first start (a fresh DATA_DIR) */
  postgresFirstStartMs: number;
  /** events and attempts written through the writer's own batch insert, per second */
  writerEventsPerSecond: number;
  /** on-disk bytes per archived user.updated (heap, TOAST and every index, its one attempt included) */
  bytesPerEvent: number;
  /** the same, per table and index of the day's partitions (TOAST with its table), largest first */
  bytesPerEventByRelation: Record<string, number>;
  searchRows: number;
  searchByEntityP50Ms: number;
  searchByEntityP99Ms: number;
}

/** A real-shaped `user.updated` as the tenant pushes it (docs/tenant.md#webhook-delivery), one per user. */
export function userUpdated(index: number, at: string): CloudEvent {
  const id = `evt_${index.toString(36).padStart(22, "0")}`;
  const user = `auth0|${(index % 100_000).toString(16).padStart(24, "0")}`;
  return {
    id,
    source: "urn:auth0:acme.us.auth0.com",
    specversion: "1.0",
    type: "user.updated",
    time: at,
    data: {
      object: {
        user_id: user,
        email: `person-${index % 100_000}@example.com`,
        email_verified: true,
        name: `Person ${index % 100_000}`,
        nickname: `person${index % 100_000}`,
        picture: "https://s.gravatar.com/avatar/0b4f2a4d1c2e3f405162738495a6b7c8?s=480&r=pg&d=https%3A%2F%2Fcdn.auth0.com%2Favatars%2Fpe.png",
        created_at: "2025-02-02T17:56:01.566Z",
        updated_at: at,
        identities: [{ connection: "Username-Password-Authentication", provider: "auth0", user_id: user.slice(6), isSocial: false }],
        app_metadata: { plan: "pro" },
        user_metadata: { locale: "en" },
      },
    },
    a0tenant: "acme",
    a0stream: "est_38ANnv8pQhqsZrX2VFbftv",
  };
}

/**
 * The archive's figures on a throwaway Postgres: its start, the writer's batch insert, bytes
 * per event on disk, and search by entity over `searchRows` rows loaded by SQL (not through
 * the service). Pipeline cost with the archive on and off is the pipeline scenario's.
 */
export async function runArchive(options: { sizeEvents: number; searchRows: number; searches: number }): Promise<ArchiveResults> {
  const binDir = systemPostgresBinDir();
  if (!binDir) throw new Error("the archive bench needs initdb and postgres: apt-get install -y postgresql");
  const dir = await mkdtemp(join(tmpdir(), "sk-bench-pg-"));
  const port = await freePort();
  try {
    let began = Date.now();
    let server = await startPostgresServer({ binDir, dataDir: join(dir, "data"), port, socketDir: dir });
    const postgresFirstStartMs = Date.now() - began;
    await server.stop();
    began = Date.now();
    server = await startPostgresServer({ binDir, dataDir: join(dir, "data"), port, socketDir: dir });
    const postgresStartMs = Date.now() - began;
    const pool = new pg.Pool({ connectionString: server.url, max: 4 });
    try {
      await migrateArchive(pool);
      const now = Date.now();
      await maintainPartitions(pool, now, 30);

      // Bytes per event: one day's partition filled through the writer's own insert, one
      // arrival a millisecond from 01:00 UTC today (each its own time, as in service: equal
      // times would let Postgres deduplicate index entries and flatter the figure).
      const at = new Date(now).toISOString();
      const firstArrival = Math.floor(now / 86_400_000) * 86_400_000 + 3_600_000;
      began = Date.now();
      for (let start = 0; start < options.sizeEvents; start += 500) {
        const records = Array.from({ length: Math.min(500, options.sizeEvents - start) }, (_, offset) => {
          const event = userUpdated(start + offset, at);
          const receivedAt = firstArrival + start + offset;
          return [
            { kind: "event" as const, event, origin: "webhook" as const, receivedAt, routes: ["crm"] },
            { kind: "attempt" as const, eventId: event.id, receivedAt, route: "crm", key: `${event.id}:1`, at: receivedAt + 20, status: 200, outcome: "delivered" as const },
          ];
        }).flat();
        await writeArchiveBatch(pool, records);
      }
      const writerEventsPerSecond = (options.sizeEvents / (Date.now() - began)) * 1000;
      await pool.query("VACUUM ANALYZE events");
      await pool.query("VACUUM ANALYZE attempts");
      const day = new Date(now).toISOString().slice(0, 10).replaceAll("-", "");
      const size = (await pool.query<{ bytes: string }>(`SELECT pg_total_relation_size('events_p${day}') + pg_total_relation_size('attempts_p${day}') AS bytes`)).rows[0]!;
      const bytesPerEvent = Number(size.bytes) / options.sizeEvents;
      // Each index by what it is on (its name is the partition's own), the tables with their TOAST.
      const relations = await pool.query<{ name: string; bytes: string }>(
        `SELECT coalesce(i.relname || ' ' || regexp_replace(pg_get_indexdef(i.oid), '^.* USING \\w+ ', ''), t.relname) AS name,
                CASE WHEN i.oid IS NULL THEN pg_table_size(t.oid) ELSE pg_relation_size(i.oid) END AS bytes
         FROM pg_class t LEFT JOIN pg_index x ON x.indrelid = t.oid LEFT JOIN pg_class i ON i.oid = x.indexrelid
         WHERE t.relname IN ('events_p${day}', 'attempts_p${day}')
         UNION ALL SELECT t.relname, pg_table_size(t.oid) FROM pg_class t WHERE t.relname IN ('events_p${day}', 'attempts_p${day}')
         ORDER BY 2 DESC`,
      );
      const bytesPerEventByRelation = Object.fromEntries(relations.rows.map((row) => [row.name, round(Number(row.bytes) / options.sizeEvents, 1)!]));

      // Search: rows over the last 30 days generated in SQL, one compressed real payload each.
      const payload = encodePayload(userUpdated(0, at));
      await pool.query(
        `INSERT INTO events (arrived_at, id, type, origin, stream, entity, failed_first, routes, payload)
         SELECT now() - (random() * interval '29 days'), 'evt_s' || g, 'user.updated', 'webhook', 'est_38ANnv8pQhqsZrX2VFbftv',
                'auth0|' || lpad(to_hex((g % 100000)::int), 24, '0'), false, ARRAY['crm'], $2
         FROM generate_series(1, $1::int) AS g`,
        [options.searchRows, payload],
      );
      await pool.query("ANALYZE events");
      const timings: number[] = [];
      for (let index = 0; index < options.searches; index++) {
        const entity = `auth0|${Math.floor(Math.random() * 100_000).toString(16).padStart(24, "0")}`;
        const start = process.hrtime.bigint();
        await pool.query(eventsMatchingSql, eventsMatchingParams({ entity }, 50));
        timings.push(Number(process.hrtime.bigint() - start) / 1e6);
      }
      return {
        postgresStartMs,
        postgresFirstStartMs,
        writerEventsPerSecond: round(writerEventsPerSecond, 0)!,
        bytesPerEvent: round(bytesPerEvent, 0)!,
        bytesPerEventByRelation,
        searchRows: options.searchRows,
        searchByEntityP50Ms: round(percentile(timings, 50))!,
        searchByEntityP99Ms: round(percentile(timings, 99))!,
      };
    } finally {
      await pool.end();
      await server.stop();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

// `npx tsx bench/scenarios/run-archive.ts [searchRows]`: this scenario alone.
if (import.meta.url === `file://${process.argv[1]}`) {
  const searchRows = Number(process.argv[2] ?? 1_000_000);
  console.log(JSON.stringify(await runArchive({ sizeEvents: 20_000, searchRows, searches: 500 }), null, 2));
}
