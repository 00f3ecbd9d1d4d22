import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { archiveOutboxKey, createArchiveOutbox } from "../../src/archive/archive-outbox.js";
import { createArchiveWriter, type ArchiveWriter } from "../../src/archive/create-archive-writer.js";
import { migrateArchive } from "../../src/archive/migrate-archive.js";
import { maintainPartitions } from "../../src/archive/archive-partitions.js";
import { archiveWriterRefused, archiveWrites } from "../../src/metrics/archive-metrics.js";
import { closeRedis, createRedis, type RedisClient } from "../../src/redis/redis-connection.js";
import { capturedLogger } from "../helpers/captured-logger.js";
import { createTestDatabase, type TestDatabase } from "../helpers/archive-database.js";
import { userEvent } from "../helpers/fixtures.js";
import { startTestService } from "../helpers/start-test-service.js";

/**
 * Processes sharing a Redis share its archive outbox: a writer whose database is another
 * than the one the outbox is archived to takes nothing and says so, rather than splitting
 * the archive; it takes over once the other database's writers are gone. The writers here
 * keep no event back for its deliveries (`holdMs: 0`, kept-back.ts): not what this tests.
 */
describe("archive: one database per outbox", () => {
  const databases: TestDatabase[] = [];
  const pools: pg.Pool[] = [];
  const connections: RedisClient[] = [];
  const prefix = `test-${randomUUID()}`;
  // A claim of 3 s renewed every 0.2 s: only a stall of over 2.5 s would let it lapse under its holder.
  const timing = { seconds: 3, everyMs: 200 };
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
    return createArchiveWriter({ redis, pool, queuePrefix: prefix, logger, retentionDays: 30, database, claimTiming: timing, retryMs: 100, holdMs: 0 });
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
    expect(other.refusedBy()).toBe(refusal.holder);
    // One gauge per process: both writers of this test set it, the refused one to 1.
    await expect.poll(async () => (await archiveWriterRefused.get()).values[0]!.value).toBe(1);

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
    expect(other.refusedBy()).toBeUndefined();
    expect((await archiveWriterRefused.get()).values[0]!.value).toBe(0);
    await other.close();
    expect(await producer.xlen(archiveOutboxKey(prefix))).toBe(0);
  });

  it("when the holding writer's Postgres is away for longer than the claim lasts, then its claim is still renewed: another database does not take the outbox meanwhile", async () => {
    const first = await poolOf();
    const second = await poolOf();
    const outagePrefix = `test-${randomUUID()}`;
    const writer = (pool: pg.Pool, database: string, logger = capturedLogger().logger) => {
      const redis = createRedis(inject("redisUrl"), "worker", "test-archive-outage");
      connections.push(redis);
      return createArchiveWriter({ redis, pool, queuePrefix: outagePrefix, logger, retentionDays: 30, database, claimTiming: timing, retryMs: 100, holdMs: 0 });
    };
    // Its own pool, ended below: every query of the holder fails from then on, as with Postgres gone.
    const holderPool = new pg.Pool({ connectionString: first.db.url, max: 2 });
    holderPool.on("error", () => {});
    const holder = writer(holderPool, "postgres://first/db");
    const errorsBefore = (await archiveWrites.get()).values.find((value) => value.labels.result === "error")?.value ?? 0;
    const outbox = createArchiveOutbox(producer, outagePrefix);
    const event = userEvent();
    await outbox([{ kind: "event", event, origin: "webhook", receivedAt: Date.now(), routes: [] }]);
    await expect.poll(() => archivedIn(first.db, [event.id])).toEqual([event.id]);
    await holderPool.end();
    // A record the holder now fails to write: its loop is down to retrying Postgres.
    const later = userEvent();
    await outbox([{ kind: "event", event: later, origin: "webhook", receivedAt: Date.now(), routes: [] }]);
    await expect.poll(async () => (await archiveWrites.get()).values.find((value) => value.labels.result === "error")?.value ?? 0).toBeGreaterThan(errorsBefore);

    const logs = capturedLogger();
    const other = writer(second.pool, "postgres://second/db", logs.logger);
    try {
      await expect.poll(() => other.refusedBy()).toMatch(/^postgres:\/\/first\/db/);
      // Twice the claim's life: still the first database's, and the record waits for it.
      await new Promise((resolve) => setTimeout(resolve, 2 * timing.seconds * 1000));
      expect(other.refusedBy()).toMatch(/^postgres:\/\/first\/db/);
      expect(await archivedIn(second.db, [later.id])).toEqual([]);
    } finally {
      await other.close();
      await holder.close();
    }
  });

  it("when a service's writer is refused, then its search, erasure and replays answer 503 saying which database holds the archive, and what to set", async () => {
    const db = await poolOf();
    const servicePrefix = `test-${randomUUID()}`;
    // Another database holds this outbox (a process elsewhere, still running).
    await producer.set(`${archiveOutboxKey(servicePrefix)}:database`, "another-archive postgres://elsewhere/archive (host-b:7)", "EX", 600);
    const service = await startTestService({ QUEUE_PREFIX: servicePrefix, ARCHIVE: "on", ARCHIVE_DATABASE_URL: db.db.url, ADMIN_TOKEN: "split-archive-token" });
    try {
      const admin = (path: string, init: RequestInit = {}) => fetch(`${service.adminUrl}${path}`, { ...init, headers: { authorization: "Bearer split-archive-token", "content-type": "application/json" } });
      await expect.poll(async () => (await admin("/admin/events?type=user.*")).status).toBe(503);
      const problem = (await (await admin("/admin/events?type=user.*")).json()) as { detail: string };
      expect(problem.detail).toBe(
        "this process's archive database is not the one the events of its Redis are archived to (postgres://elsewhere/archive (host-b:7)): search, replay and erasure here would see a part of the archive. Ask a process using that database, or give this one the same ARCHIVE_DATABASE_URL (docs/deploy.md, The archive: one database)",
      );
      expect((await admin("/admin/entities/auth0%7Cx", { method: "DELETE" })).status).toBe(503);
      expect((await admin("/admin/replays", { method: "POST", body: JSON.stringify({ route: "default", since: new Date().toISOString() }) })).status).toBe(503);
      // A replay's own state stays readable: an unknown one is a 404, not refused.
      expect((await admin("/admin/replays/rpl_unknown")).status).toBe(404);
    } finally {
      await service.close();
    }
  });

  it("when two processes name the same database, then both take records (one consumer group, no refusal)", async () => {
    const shared = await poolOf();
    const sharedPrefix = `test-${randomUUID()}`;
    const outbox = createArchiveOutbox(producer, sharedPrefix);
    const logs = capturedLogger();
    const writers = ["a", "b"].map((name) => {
      const redis = createRedis(inject("redisUrl"), "worker", `test-archive-${name}`);
      connections.push(redis);
      return createArchiveWriter({ redis, pool: shared.pool, queuePrefix: sharedPrefix, logger: logs.logger, retentionDays: 30, consumer: name, database: "postgres://shared/db", claimTiming: timing, batchSize: 5, holdMs: 0 });
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
