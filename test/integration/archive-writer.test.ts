import { randomUUID } from "node:crypto";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { archiveOutboxKey, createArchiveOutbox } from "../../src/archive/archive-outbox.js";
import { maintainPartitions } from "../../src/archive/archive-partitions.js";
import { eventsMatchingParams, eventsMatchingSql, type EventFilter } from "../../src/archive/archive-queries.js";
import { createArchiveWriter } from "../../src/archive/create-archive-writer.js";
import { migrateArchive } from "../../src/archive/migrate-archive.js";
import { archiveWrites } from "../../src/metrics/archive-metrics.js";
import { createLogger } from "../../src/logging/logger.js";
import { closeRedis, createRedis } from "../../src/redis/redis-connection.js";
import { createPooledDatabase, type ArchiveDatabase } from "../helpers/archive-database.js";
import { userEvent } from "../helpers/fixtures.js";

const day = 86_400_000;

describe("archive writer, retention and search plans", () => {
  let db: ArchiveDatabase;
  let pool: pg.Pool;
  beforeAll(async () => {
    ({ pool } = db = await createPooledDatabase());
    await migrateArchive(pool);
  });
  afterAll(() => db?.drop());

  it("when the schema is migrated twice, then each migration is applied once", async () => {
    expect(await migrateArchive(pool)).toEqual([]);
    expect((await db.query<{ version: number }>("SELECT version FROM archive_migrations ORDER BY version")).map((row) => row.version)).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it("when the clock passes the retention, then whole day partitions are dropped, never rows deleted", async () => {
    const start = Date.UTC(2026, 0, 10, 12);
    await maintainPartitions(pool, start, 30);
    await db.query("INSERT INTO events (arrived_at, id, type, origin, failed_first, routes) VALUES ($1, 'evt_old', 'user.updated', 'webhook', false, '{}'), ($2, 'evt_new', 'user.updated', 'webhook', false, '{}')", [new Date(start - 29 * day), new Date(start)]);
    const partitions = async () => (await db.query<{ name: string }>("SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = 'events'")).map((row) => row.name);
    expect(await partitions()).toContain("events_p20251212");
    expect(await partitions()).toContain("events_p20260112");

    // Ten days later: the days older than 30 days before then are gone, with their rows.
    const dropped = await maintainPartitions(pool, start + 10 * day, 30);
    expect(dropped).toContain("events_p20251212");
    expect(dropped).toContain("attempts_p20251212");
    expect(dropped).not.toContain("events_p20251221");
    expect(await partitions()).not.toContain("events_p20251212");
    expect(await partitions()).toContain("events_p20260122");
    expect((await db.query<{ id: string }>("SELECT id FROM events WHERE id IN ('evt_old', 'evt_new') ORDER BY id")).map((row) => row.id)).toEqual(["evt_new"]);
  });

  it("when the outbox holds poison among good records, then the good ones are archived once, the poison is set aside and counted, and the writer goes on", async () => {
    await maintainPartitions(pool, Date.now(), 30);
    const prefix = `test-${randomUUID()}`;
    const redis = createRedis(inject("redisUrl"), "worker", "test-archive-writer");
    const producer = createRedis(inject("redisUrl"), "worker", "test-archive-producer");
    const outbox = createArchiveOutbox(producer, prefix);
    const poisonBefore = (await archiveWrites.get()).values.find((value) => value.labels.result === "poison")?.value ?? 0;
    const good = Array.from({ length: 20 }, () => userEvent());
    // A NUL is archived (encoded: archive-text.ts); an arrival with no partition Postgres refuses on its own.
    const nul = userEvent({ type: "user.updated\u0000" });
    const unplaceable = userEvent();
    await outbox(good.slice(0, 10).map((event) => ({ kind: "event", event, origin: "webhook", receivedAt: Date.now(), routes: ["crm"] })));
    await producer.xadd(archiveOutboxKey(prefix), "*", "r", "{not json");
    await outbox([{ kind: "event", event: nul, origin: "webhook", receivedAt: Date.now(), routes: [] }]);
    await outbox([{ kind: "event", event: unplaceable, origin: "webhook", receivedAt: Date.now() + 10 * 86_400_000, routes: [] }]);
    // The same event twice (a store retried after a Redis fault): archived once.
    await outbox([...good.slice(10), good[0]!].map((event) => ({ kind: "event", event, origin: "reconcile", receivedAt: Date.now(), routes: ["crm"] })));
    const writer = createArchiveWriter({ redis, pool, queuePrefix: prefix, logger: createLogger("silent"), retentionDays: 30 });
    try {
      await expect.poll(async () => producer.xlen(archiveOutboxKey(prefix))).toBe(0);
      const rows = await db.query<{ id: string; origin: string; failed_first: boolean }>("SELECT id, origin, failed_first FROM events WHERE id = ANY($1)", [[...good, nul, unplaceable].map((event) => event.id)]);
      expect(rows.map((row) => row.id).sort()).toEqual([...good, nul].map((event) => event.id).sort());
      expect(rows.find((row) => row.id === good[15]!.id)).toMatchObject({ origin: "reconcile", failed_first: true });
      expect(rows.find((row) => row.id === good[0]!.id)).toMatchObject({ origin: "webhook", failed_first: false });
      const poisonAfter = (await archiveWrites.get()).values.find((value) => value.labels.result === "poison")?.value ?? 0;
      expect(poisonAfter - poisonBefore).toBe(2);
    } finally {
      await writer.close();
      await closeRedis(redis);
      await closeRedis(producer);
    }
  });

  // EXPLAIN of every search the admin API runs: it fails when one stops using its index.
  // The filter must be an index condition on every day's partition (no partition read whole).
  it.each<[string, EventFilter, RegExp]>([
    ["by id", { id: "evt_x" }, /Index Cond: \(hashtext\(id\) = -?\d+\)\n\s+Filter: \(id = 'evt_x'::text\)/],
    // Its index holds a hash of the entity (migration 007); the entity itself checked on the row.
    ["by entity", { entity: "auth0|x" }, /Index Cond: \(hashtext\(entity\) = -?\d+\)\n\s+Filter: \(entity = 'auth0\|x'::text\)/],
    ["by type pattern", { type: "user.*" }, /Index Cond: \(\(type >= 'user\.'::text\) AND \(type < 'user\/'::text\)\)/],
    ["by window", { since: Date.now() - 3_600_000 }, /Index Cond: \(arrived_at >= /],
  ])("when events are searched %s, then the plan reads the index", async (_name, filter, index) => {
    await maintainPartitions(pool, Date.now(), 30);
    const client = await pool.connect();
    try {
      await client.query("SET enable_seqscan = off");
      const plan = (await client.query<{ "QUERY PLAN": string }>(`EXPLAIN ${eventsMatchingSql}`, eventsMatchingParams(filter, 50))).rows.map((row) => row["QUERY PLAN"]).join("\n");
      expect(plan).toMatch(index);
      expect(plan).not.toMatch(/Seq Scan on events_p/);
    } finally {
      await client.query("RESET enable_seqscan");
      client.release();
    }
  });
});
