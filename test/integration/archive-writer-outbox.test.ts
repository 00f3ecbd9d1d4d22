import { randomUUID } from "node:crypto";
import { Redis, type RedisOptions } from "ioredis";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, inject } from "vitest";
import { archivedThrough, archiveOutboxKey, archiveWriterGroup, createArchiveOutbox, outboxArrivalMarginMs } from "../../src/archive/archive-outbox.js";
import { maintainPartitions } from "../../src/archive/archive-partitions.js";
import type { ArchiveRecord } from "../../src/archive/archive-record.js";
import { createArchiveWriter, type ArchiveWriterDeps } from "../../src/archive/create-archive-writer.js";
import { archiveWrites } from "../../src/metrics/archive-metrics.js";
import { closeRedis, createRedis, type RedisClient } from "../../src/redis/redis-connection.js";
import { capturedLogger } from "../helpers/captured-logger.js";
import { createArchiveDatabase, createTestDatabase, type ArchiveDatabase, type TestDatabase } from "../helpers/archive-database.js";
import { useCleanup } from "../helpers/cleanup.js";
import { refusedPort } from "../helpers/explicit-ports.js";
import { userEvent } from "../helpers/fixtures.js";

const day = 86_400_000;
const hour = 3_600_000;

/** archive_writes_total{result} so far (the registry is the process's: tests count differences). */
async function writes(result: string): Promise<number> {
  return (await archiveWrites.get()).values.find((value) => value.labels.result === result)?.value ?? 0;
}

function eventRecords(count: number): { ids: string[]; records: ArchiveRecord[] } {
  const events = Array.from({ length: count }, () => userEvent());
  return { ids: events.map((event) => event.id), records: events.map((event) => ({ kind: "event", event, origin: "webhook", receivedAt: Date.now(), routes: [] })) };
}

/** `events_p20260127` for the UTC day of `at`, as archive-partitions.ts names it. */
function partitionOf(table: string, at: number): string {
  return `${table}_p${new Date(at).toISOString().slice(0, 10).replaceAll("-", "")}`;
}

/**
 * How the archive writer reads its Redis outbox as one consumer of the writers' group
 * (docs/architecture.md, "The archive"): what a restarted or crashed writer left read but
 * not archived, a writer after another, each of Redis's reply shapes; and the schema and
 * day partitions it keeps in Postgres.
 */
describe("archive writer: the outbox it reads and the schema it keeps", () => {
  let db: ArchiveDatabase;
  let pool: pg.Pool;
  const undo = useCleanup("each");
  beforeAll(async () => void ({ pool } = db = await createArchiveDatabase()));
  afterAll(() => db?.drop());

  /** An outbox of a prefix of its own and a connection that adds to it; removed after the test. */
  function outboxOfItsOwn() {
    const prefix = `test-${randomUUID()}`;
    const key = archiveOutboxKey(prefix);
    const producer: RedisClient = createRedis(inject("redisUrl"), "worker", "test-archive-producer");
    undo.push(() => closeRedis(producer), () => producer.del(key));
    const drained = () => expect.poll(async () => producer.xlen(key)).toBe(0);
    const outbox = createArchiveOutbox(producer, prefix);
    /** `count` records read by `consumer` and not archived: pending for its name, as a writer's process that stopped left them. */
    const heldBy = async (consumer: string, count: number) => {
      await producer.xgroup("CREATE", key, archiveWriterGroup, "0", "MKSTREAM");
      const held = eventRecords(count);
      await outbox(held.records);
      await producer.call("XREADGROUP", "GROUP", archiveWriterGroup, consumer, "COUNT", 10, "STREAMS", key, ">");
      return held;
    };
    return { prefix, key, producer, outbox, drained, heldBy };
  }

  /** A writer on its own connection (or `redis`), closed after the test. */
  function startWriter(prefix: string, options: Partial<ArchiveWriterDeps> = {}) {
    const redis = options.redis ?? createRedis(inject("redisUrl"), "worker", "test-archive-writer");
    const { logger, lines } = capturedLogger("info");
    const writer = createArchiveWriter({ redis, pool, queuePrefix: prefix, logger, retentionDays: 30, ...options });
    // Closed with its connection cut in the same turn: its blocking read ends now, not at the end of its second.
    undo.push(async () => {
      const closed = writer.close();
      redis.disconnect();
      await closed;
    });
    return { writer, lines };
  }

  async function archived(ids: string[], on: TestDatabase = db): Promise<number> {
    return (await on.query("SELECT 1 FROM events WHERE id = ANY($1)", [ids])).length;
  }

  it("when a writer starts on a database without the archive's schema, then it creates it, says which migrations it applied and archives; the next writer on it migrates nothing and says nothing of it", async () => {
    const fresh = await createTestDatabase();
    undo.push(() => fresh.drop());
    const freshPool = new pg.Pool({ connectionString: fresh.url, max: 2 });
    freshPool.on("error", () => {});
    undo.push(() => freshPool.end());
    const { prefix, outbox, drained } = outboxOfItsOwn();
    const first = startWriter(prefix, { pool: freshPool });
    const before = eventRecords(2);
    await outbox(before.records);
    await drained();
    expect(await archived(before.ids, fresh)).toBe(2);
    expect(first.lines.filter((line) => line.msg === "archive schema migrated").map((line) => line.migrations)).toEqual([[1, 2, 3, 4, 5, 6, 7]]);
    await first.writer.close();

    // The next process's writer: the schema is current, and the group exists already.
    const next = startWriter(prefix, { pool: freshPool });
    const after = eventRecords(2);
    await outbox(after.records);
    await drained();
    expect(await archived(after.ids, fresh)).toBe(2);
    expect(next.writer.available()).toBe(true);
    expect(next.lines.filter((line) => line.msg === "archive schema migrated")).toHaveLength(0);
  });

  it("when a writer restarts under its consumer name with records it had read but not archived (its process came back), then it archives those first, batch after batch, then the new ones", async () => {
    const { prefix, key, producer, outbox, drained, heldBy } = outboxOfItsOwn();
    // The process's first life read them (pending for its name) and stopped before archiving.
    const read = await heldBy("pod-0", 5);
    expect((await producer.xpending(key, archiveWriterGroup))[0]).toBe(5);

    startWriter(prefix, { consumer: "pod-0", batchSize: 2 });
    await drained();
    expect(await archived(read.ids)).toBe(5);
    const later = eventRecords(1);
    await outbox(later.records);
    await drained();
    expect(await archived(later.ids)).toBe(1);
    expect((await producer.xpending(key, archiveWriterGroup))[0]).toBe(0);
  });

  it("when a writer's process died holding records (read, not archived) for longer than the claim wait, then another process's writer takes them over and archives them", async () => {
    const { prefix, key, producer, drained, heldBy } = outboxOfItsOwn();
    const held = await heldBy("pod-gone", 3);
    const ids = (await producer.xrange(key, "-", "+")).map(([id]) => id);
    expect(ids).toHaveLength(3);
    // Idle for a minute as far as Redis knows (XCLAIM's IDLE), past the writer's 30 s claim wait.
    await producer.call("XCLAIM", key, archiveWriterGroup, "pod-gone", 0, ...ids, "IDLE", 60_000);

    startWriter(prefix, { consumer: "pod-new" });
    await drained();
    expect(await archived(held.ids)).toBe(3);
    expect((await producer.xpending(key, archiveWriterGroup))[0]).toBe(0);
  });

  it("when the writer's clock passes the next day, then its hourly upkeep drops the day partitions older than ARCHIVE_RETENTION_DAYS and says so, not before the hour is up", async () => {
    const { prefix, outbox, drained } = outboxOfItsOwn();
    // Half an hour before the next UTC midnight: 59 minutes on is the next day already.
    const start = Math.floor(Date.now() / day) * day + day - 30 * 60_000;
    // The partitions as of that clock: the database's were made at its creation, which a
    // midnight may have passed since, leaving a day for the first upkeep to drop.
    await maintainPartitions(pool, start, 30);
    let clock = start;
    const { lines } = startWriter(prefix, { now: () => clock, retentionDays: 30 });
    // Two records, one after the other: the loop has gone round once more since the clock was set.
    const goRound = async () => {
      for (let turn = 0; turn < 2; turn += 1) {
        const one = eventRecords(1);
        await outbox(one.records);
        await drained();
        expect(await archived(one.ids)).toBe(1);
      }
    };
    const droppedLines = () => lines.filter((line) => String(line.msg).startsWith("archive: dropped the days older than ARCHIVE_RETENTION_DAYS"));
    await goRound();
    clock = start + 59 * 60_000;
    await goRound();
    expect(droppedLines()).toHaveLength(0);

    clock = start + hour + 60_000;
    await goRound();
    const oldest = Math.floor(start / day) * day - 30 * day;
    expect(droppedLines().map((line) => ({ partitions: line.partitions, retentionDays: line.retentionDays }))).toEqual([
      { partitions: [partitionOf("events", oldest), partitionOf("attempts", oldest)], retentionDays: 30 },
    ]);
  });

  it.each<[string, RedisOptions]>([
    ["RESP2 (a server or proxy without HELLO)", { protocol: 2 }],
    ["RESP3 with its maps as objects", { protocol: 3, replyMapping: "resp3" }],
  ])("when the writer's Redis connection speaks %s, then it archives what waited before it started and what comes after", async (_name, options) => {
    const { prefix, outbox, drained } = outboxOfItsOwn();
    const waiting = eventRecords(2);
    await outbox(waiting.records);
    const redis = new Redis(inject("redisUrl"), { maxRetriesPerRequest: null, ...options }) as unknown as RedisClient;
    startWriter(prefix, { redis });
    await drained();
    const later = eventRecords(2);
    await outbox(later.records);
    await drained();
    expect(await archived([...waiting.ids, ...later.ids])).toBe(4);
  });

  it("when records wait in the outbox, then the archive is complete through the oldest one's time less the margin, and through now less it when none waits (what a replay may read up to)", async () => {
    const { prefix, key, producer } = outboxOfItsOwn();
    const now = Date.now();
    expect(await archivedThrough(producer, prefix, now)).toBe(now - outboxArrivalMarginMs);
    await producer.xadd(key, `${now - 60_000}-0`, "r", "{}");
    await producer.xadd(key, `${now - 30_000}-0`, "r", "{}");
    expect(await archivedThrough(producer, prefix, now)).toBe(now - 60_000 - outboxArrivalMarginMs);
    await producer.xdel(key, `${now - 60_000}-0`);
    expect(await archivedThrough(producer, prefix, now)).toBe(now - 30_000 - outboxArrivalMarginMs);
    // Redis's clock ahead of the service's: the record's own receivedAt, when earlier, decides.
    await producer.xdel(key, `${now - 30_000}-0`);
    await producer.xadd(key, `${now - 10_000}-0`, "r", JSON.stringify({ kind: "event", receivedAt: now - 40_000 }));
    expect(await archivedThrough(producer, prefix, now)).toBe(now - 40_000 - outboxArrivalMarginMs);
    // An attempt's receivedAt is its event's arrival (a replay's delivery of a day-old event):
    // only its entry's time decides, or a replay would wait behind its own attempts' records.
    await producer.xdel(key, `${now - 10_000}-0`);
    await producer.xadd(key, `${now - 2_000}-0`, "r", JSON.stringify({ kind: "attempt", receivedAt: now - 86_400_000 }));
    expect(await archivedThrough(producer, prefix, now)).toBe(now - 2_000 - outboxArrivalMarginMs);
  });

  it("when the writer stops between removing an archived batch from the outbox and acknowledging it, then nothing is left in the stream to hold the archive's completeness back, and the next read acknowledges what was left pending", async () => {
    const { prefix, key, producer, outbox, drained } = outboxOfItsOwn();
    // The writer's connection, but the second of a batch's two closing calls (XDEL and XACK,
    // whichever comes second) fails once: the process stopping in between.
    const redis = createRedis(inject("redisUrl"), "worker", "test-archive-writer");
    let closingCalls = 0;
    const stopsOnce = new Proxy(redis, {
      get(target, property) {
        if (property === "xdel" || property === "xack") {
          return async (...args: unknown[]) => {
            if (++closingCalls === 2) throw new Error("the writer's process stopped here");
            return (target[property] as (...a: unknown[]) => Promise<unknown>)(...args);
          };
        }
        const value = Reflect.get(target, property, target) as unknown;
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    startWriter(prefix, { redis: stopsOnce, retryMs: 100 });
    const batch = eventRecords(3);
    await outbox(batch.records);
    await drained();
    expect(await archived(batch.ids)).toBe(3);
    expect(closingCalls).toBeGreaterThanOrEqual(2);
    // What a replay may read up to is not held back by an entry nobody will read again.
    expect(await archivedThrough(producer, prefix)).toBeGreaterThan(Date.now() - 60_000);
    await expect.poll(async () => ((await producer.xpending(key, archiveWriterGroup)) as [number])[0]).toBe(0);
    expect(await archived(batch.ids)).toBe(3);
  });

  it("when more records wait than one batch holds, then each batch is archived in one transaction of at most batchSize records", async () => {
    const { prefix, outbox, drained } = outboxOfItsOwn();
    const waiting = eventRecords(10);
    await outbox(waiting.records);
    startWriter(prefix, { batchSize: 4 });
    await drained();
    // Rows committed by one transaction share its id (xmin).
    const transactions = await db.query<{ rows: number }>("SELECT count(*)::int AS rows FROM events WHERE id = ANY($1) GROUP BY xmin::text", [waiting.ids]);
    expect(transactions.map((transaction) => transaction.rows).sort()).toEqual([2, 4, 4]);
  });

  it("when records keep coming after a part batch, then the writer waits gatherMs and writes what came meanwhile in one transaction, not one per arrival", async () => {
    const { prefix, outbox, drained } = outboxOfItsOwn();
    const first = eventRecords(1);
    await outbox(first.records);
    startWriter(prefix, { gatherMs: 60_000 });
    await drained();
    // Within the writer's wait after its first part batch: ten arrivals, one at a time.
    const later = eventRecords(10);
    for (const record of later.records) await outbox([record]);
    expect(await db.query("SELECT id FROM events WHERE id = ANY($1)", [later.ids])).toEqual([]);
    const { writer } = startWriter(prefix, { gatherMs: 0, consumer: `other-${randomUUID()}` });
    await drained();
    const transactions = await db.query<{ rows: number }>("SELECT count(*)::int AS rows FROM events WHERE id = ANY($1) GROUP BY xmin::text", [later.ids]);
    expect(transactions.map((transaction) => transaction.rows)).toEqual([10]);
    await writer.close();
  });

  it("when a process does not drain the outbox (a receiver), then it takes no record, is no consumer of the writers' group, and still says the archive is available", async () => {
    const { prefix, key, producer, outbox, drained } = outboxOfItsOwn();
    const waiting = eventRecords(3);
    await outbox(waiting.records);
    const { writer } = startWriter(prefix, { drains: false, consumer: "receiver" });
    await expect.poll(() => writer.available()).toBe(true);
    // A worker's writer, started after it, archives them all.
    startWriter(prefix, { consumer: "worker" });
    await drained();
    expect(await db.query("SELECT id FROM events WHERE id = ANY($1)", [waiting.ids])).toHaveLength(3);
    const consumers = (await producer.xinfo("CONSUMERS", key, archiveWriterGroup)) as unknown[][];
    expect(consumers.map((consumer) => consumer[1])).toEqual(["worker"]);
    expect(writer.available()).toBe(true);
  });

  it("when the outbox is empty, then the writer waits in a blocking read on Redis, not in a loop of reads", async () => {
    const { prefix } = outboxOfItsOwn();
    const name = `test-archive-writer-${randomUUID()}`;
    const redis = createRedis(inject("redisUrl"), "worker", name);
    const { writer } = startWriter(prefix, { redis });
    const observer: RedisClient = createRedis(inject("redisUrl"), "worker", "test-archive-observer");
    undo.push(() => closeRedis(observer));
    const blockedInRead = async () => {
      const line = String(await observer.call("CLIENT", "LIST")).split("\n").find((client) => client.includes(` name=${name} `));
      return Boolean(line && / flags=b /.test(line) && / cmd=xreadgroup /.test(line));
    };
    await expect.poll(blockedInRead).toBe(true);
    // Closed, it reads no more: its connection is left idle, not waiting on the outbox.
    await writer.close();
    expect(await blockedInRead()).toBe(false);
  });

  it("when the writer is closed as its Redis connection is cut (the process stopping), then it stops without saying the archive is unavailable or counting an error", async () => {
    const { prefix, outbox, drained } = outboxOfItsOwn();
    const redis = createRedis(inject("redisUrl"), "worker", "test-archive-writer");
    const { writer, lines } = startWriter(prefix, { redis });
    const one = eventRecords(1);
    await outbox(one.records);
    await drained();
    const errorsBefore = await writes("error");
    const closed = writer.close();
    redis.disconnect();
    await closed;
    expect(lines.filter((line) => String(line.msg).startsWith("archive unavailable"))).toHaveLength(0);
    expect((await writes("error")) - errorsBefore).toBe(0);
  });

  it("when the writer is closed while it waits to try Postgres again, then it stops at once, not at the end of its wait", { timeout: 60_000 }, async () => {
    const { prefix } = outboxOfItsOwn();
    const unreachable = new pg.Pool({ connectionString: `postgres://streamkeeper@127.0.0.1:${refusedPort}/archive`, max: 1, connectionTimeoutMillis: 1000 });
    unreachable.on("error", () => {});
    undo.push(() => unreachable.end());
    const errorsBefore = await writes("error");
    // A wait of ten minutes, against the test's one.
    const { writer } = startWriter(prefix, { pool: unreachable, retryMs: 600_000 });
    await expect.poll(async () => (await writes("error")) - errorsBefore).toBeGreaterThanOrEqual(1);
    await writer.close();
    expect(writer.available()).toBe(false);
  });
  it.each<[string, RedisOptions]>([
    ["RESP3, as the service's connections", {}],
    ["RESP2", { protocol: 2 }],
    ["RESP3 with its maps as objects", { protocol: 3, replyMapping: "resp3" }],
  ])("when a record a restarted writer held was removed from the outbox meanwhile (%s), then it skips it and archives the others it held", async (_name, options) => {
    const { prefix, key, producer, drained, heldBy } = outboxOfItsOwn();
    const held = await heldBy("pod-0", 3);
    const [removed] = (await producer.xrange(key, "-", "+")).map(([id]) => id);
    // Still held (pending) by the writer's name: Redis answers its re-read with the id and no fields.
    await producer.xdel(key, removed!);
    const redis = new Redis(inject("redisUrl"), { maxRetriesPerRequest: null, ...options }) as unknown as RedisClient;
    startWriter(prefix, { redis, consumer: "pod-0" });
    await drained();
    expect(await archived(held.ids.slice(1))).toBe(2);
    expect(await archived(held.ids.slice(0, 1))).toBe(0);
    // The removed id is acknowledged too: nothing stays in the group's pending list for good.
    await expect.poll(async () => (await producer.xpending(key, archiveWriterGroup))[0]).toBe(0);
  });
  it("when Postgres answers a batch with an error about neither its data nor the connection (a lock it could not take), then the writer says the archive is unavailable once, tries again, and once the batch is archived says it is available again", async () => {
    const { prefix, outbox, drained } = outboxOfItsOwn();
    const refuse = `test_refuse_${randomUUID().replaceAll("-", "")}`;
    // Every INSERT into events refused with lock_not_available (55P03) until the trigger is dropped.
    await pool.query(`CREATE FUNCTION ${refuse}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'held by the test' USING ERRCODE = '55P03'; END $$`);
    await pool.query(`CREATE TRIGGER ${refuse} BEFORE INSERT ON events FOR EACH STATEMENT EXECUTE FUNCTION ${refuse}()`);
    undo.push(() => pool.query(`DROP TRIGGER IF EXISTS ${refuse} ON events; DROP FUNCTION IF EXISTS ${refuse}()`));
    const errorsBefore = await writes("error");
    const { writer, lines } = startWriter(prefix, { retryMs: 100 });
    const { ids, records } = eventRecords(2);
    await outbox(records);
    await expect.poll(async () => (await writes("error")) - errorsBefore).toBeGreaterThanOrEqual(2);
    expect(writer.available()).toBe(false);
    expect(await archived(ids)).toBe(0);
    await pool.query(`DROP TRIGGER ${refuse} ON events`);
    await drained();
    expect(await archived(ids)).toBe(2);
    const said = (start: string) => lines.filter((line) => String(line.msg).startsWith(start));
    await expect.poll(() => said("archive available again")).toHaveLength(1);
    expect(writer.available()).toBe(true);
    expect(said("archive unavailable").map((line) => (line.err as { code?: string } | undefined)?.code)).toEqual(["55P03"]);
  });
  it.each<[string, RedisOptions]>([
    ["RESP3, as the service's connections", {}],
    ["RESP2", { protocol: 2 }],
  ])("when the writer's blocking read ends with nothing (%s), then it reads again, saying nothing and counting nothing", async (_name, options) => {
    const { prefix } = outboxOfItsOwn();
    const name = `test-archive-writer-${randomUUID()}`;
    const redis = new Redis(inject("redisUrl"), { maxRetriesPerRequest: null, connectionName: name, ...options }) as unknown as RedisClient;
    const { lines } = startWriter(prefix, { redis });
    const observer: RedisClient = createRedis(inject("redisUrl"), "worker", "test-archive-observer");
    undo.push(() => closeRedis(observer));
    const blockedId = async () => {
      const line = String(await observer.call("CLIENT", "LIST")).split("\n").find((client) => client.includes(` name=${name} `));
      return line && / flags=b /.test(line) && / cmd=xreadgroup /.test(line) ? /^id=(\d+) /.exec(line)?.[1] : undefined;
    };
    const errorsBefore = await writes("error");
    const poisonBefore = await writes("poison");
    // Ended as its one-second timeout would end it (Redis answers null), three times over.
    // (A read that ended by itself in between is not counted: UNBLOCK answers 0.)
    for (let unblocked = 0; unblocked < 3; ) {
      let id: string | undefined;
      await expect.poll(async () => (id = await blockedId())).toBeDefined();
      unblocked += Number(await observer.call("CLIENT", "UNBLOCK", id!, "TIMEOUT"));
    }
    await expect.poll(blockedId).toBeDefined();
    expect((await writes("error")) - errorsBefore).toBe(0);
    expect((await writes("poison")) - poisonBefore).toBe(0);
    expect(lines.filter((line) => Number(line.level) >= 40)).toEqual([]);
  });
});
