import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { archiveOutboxKey, createArchiveOutbox } from "../../src/archive/archive-outbox.js";
import { createArchiveWriter, type ArchiveWriter } from "../../src/archive/create-archive-writer.js";
import { migrateArchive } from "../../src/archive/migrate-archive.js";
import { maintainPartitions } from "../../src/archive/archive-partitions.js";
import { archiveWriterRefused } from "../../src/metrics/archive-metrics.js";
import { closeRedis, createRedis, type RedisClient } from "../../src/redis/redis-connection.js";
import { capturedLogger } from "../helpers/captured-logger.js";
import { createTestDatabase, type TestDatabase } from "../helpers/archive-database.js";
import { userEvent } from "../helpers/fixtures.js";

/**
 * Processes sharing a Redis share its archive outbox: a writer whose database is another
 * than the one the outbox is archived to takes nothing and says so, rather than splitting
 * the archive; it takes over once the other database's writers are gone.
 */
describe("archive: one database per outbox", () => {
  const databases: TestDatabase[] = [];
  const pools: pg.Pool[] = [];
  const connections: RedisClient[] = [];
  const prefix = `test-${randomUUID()}`;
  const timing = { seconds: 2, everyMs: 200 };
  let producer: RedisClient;

  const poolOf = async () => {
    const db = await createTestDatabase();
    databases.push(db);
    const pool = new pg.Pool({ connectionString: db.url, max: 2 });
    pool.on("error", () => {});
    pools.push(pool);
    await migrateArchive(pool);
    await maintainPartitions(pool, Date.now(), 30);
    return { db, pool };
  };
  const writerOn = (pool: pg.Pool, database: string, logger = capturedLogger().logger): ArchiveWriter => {
    const redis = createRedis(inject("redisUrl"), "worker", "test-archive-one-database");
    connections.push(redis);
    return createArchiveWriter({ redis, pool, queuePrefix: prefix, logger, retentionDays: 30, database, claimTiming: timing, retryMs: 100 });
  };
  const archivedIn = async (db: TestDatabase, ids: string[]) => (await db.query<{ id: string }>("SELECT id FROM events WHERE id = ANY($1)", [ids])).map((row) => row.id).sort();

  beforeAll(() => {
    producer = createRedis(inject("redisUrl"), "worker", "test-archive-producer");
    connections.push(producer);
  });
  afterAll(async () => {
    for (const connection of connections) await closeRedis(connection);
    for (const pool of pools) await pool.end();
    for (const db of databases) await db.drop();
  });

  it("when a second process's writer has another database, then it takes no record, says so at error and sets its gauge; once the first is gone it takes over", async () => {
    const first = await poolOf();
    const second = await poolOf();
    const outbox = createArchiveOutbox(producer, prefix);
    const write = async (count: number) => {
      const events = Array.from({ length: count }, () => userEvent());
      await outbox(events.map((event) => ({ kind: "event", event, origin: "webhook", receivedAt: Date.now(), routes: ["crm"] })));
      return events.map((event) => event.id).sort();
    };

    const holder = writerOn(first.pool, "postgres://first/db");
    const before = await write(20);
    await expect.poll(() => archivedIn(first.db, before)).toEqual(before);

    const logs = capturedLogger();
    const other = writerOn(second.pool, "postgres://second/db", logs.logger);
    await expect.poll(() => logs.lines.some((line) => line.level === 50 && String(line.msg).startsWith("archive: this process's archive database is not the one"))).toBe(true);
    const refusal = logs.lines.find((line) => line.level === 50)!;
    expect(refusal).toMatchObject({ database: "postgres://second/db" });
    expect(String(refusal.holder)).toMatch(/^postgres:\/\/first\/db \(/);
    expect((await archiveWriterRefused.get()).values[0]!.value).toBe(1);

    // While both run, every record goes to the first database only.
    const during = await write(50);
    await expect.poll(() => archivedIn(first.db, during)).toEqual(during);
    expect(await archivedIn(second.db, [...before, ...during])).toEqual([]);
    expect(logs.lines.filter((line) => line.level === 50)).toHaveLength(1); // said once, not per try

    // The first process stops: its claim lapses, and the second database takes the outbox.
    await holder.close();
    const after = await write(10);
    await expect.poll(() => archivedIn(second.db, after)).toEqual(after);
    await expect.poll(async () => logs.lines.some((line) => line.msg === "archive: this writer's database now takes the outbox's records")).toBe(true);
    expect((await archiveWriterRefused.get()).values[0]!.value).toBe(0);
    await other.close();
    expect(await producer.xlen(archiveOutboxKey(prefix))).toBe(0);
  });

  it("when two processes name the same database, then both take records (one consumer group, no refusal)", async () => {
    const shared = await poolOf();
    const sharedPrefix = `test-${randomUUID()}`;
    const outbox = createArchiveOutbox(producer, sharedPrefix);
    const logs = capturedLogger();
    const writers = ["a", "b"].map((name) => {
      const redis = createRedis(inject("redisUrl"), "worker", `test-archive-${name}`);
      connections.push(redis);
      return createArchiveWriter({ redis, pool: shared.pool, queuePrefix: sharedPrefix, logger: logs.logger, retentionDays: 30, consumer: name, database: "postgres://shared/db", claimTiming: timing, batchSize: 5 });
    });
    try {
      const events = Array.from({ length: 200 }, () => userEvent());
      await outbox(events.map((event) => ({ kind: "event", event, origin: "webhook", receivedAt: Date.now(), routes: [] })));
      const ids = events.map((event) => event.id).sort();
      await expect.poll(() => archivedIn(shared.db, ids)).toEqual(ids);
      expect(logs.lines.filter((line) => Number(line.level) >= 50)).toEqual([]);
    } finally {
      for (const writer of writers) await writer.close();
    }
  });
});
