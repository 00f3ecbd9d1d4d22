import { randomUUID } from "node:crypto";
import { createServer, connect, type AddressInfo, type Server, type Socket } from "node:net";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, inject } from "vitest";
import { archiveOutboxKey, createArchiveOutbox } from "../../src/archive/archive-outbox.js";
import { oldestKept } from "../../src/archive/archive-partitions.js";
import { eventsMatching, timelineOfEvent } from "../../src/archive/archive-queries.js";
import { forgetEntity } from "../../src/archive/forget-entity.js";
import type { ArchiveRecord, AttemptRecord } from "../../src/archive/archive-record.js";
import { createArchiveWriter, type ArchiveWriter } from "../../src/archive/create-archive-writer.js";
import { decodePayload } from "../../src/archive/payload-codec.js";
import { writeArchiveBatch } from "../../src/archive/write-archive-batch.js";
import { archiveWrites } from "../../src/metrics/archive-metrics.js";
import { closeRedis, createRedis, type RedisClient } from "../../src/redis/redis-connection.js";
import { capturedLogger } from "../helpers/captured-logger.js";
import { createArchiveDatabase, type ArchiveDatabase } from "../helpers/archive-database.js";
import { useCleanup } from "../helpers/cleanup.js";
import { userEvent } from "../helpers/fixtures.js";

const day = 86_400_000;

/** archive_writes_total{result} so far (the registry is the process's: tests count differences). */
async function writes(result: string): Promise<number> {
  return (await archiveWrites.get()).values.find((value) => value.labels.result === result)?.value ?? 0;
}

/**
 * What the archive writer makes of each record of the outbox (docs/architecture.md, "The
 * archive"): the rows an operator searches, each record once, what it sets aside, and a
 * Postgres that goes away and comes back (a TCP proxy cut here, in this process, where
 * archive-postgres-outage.test.ts stops a Postgres of its own).
 */
describe("archive writer: what each record becomes", () => {
  let db: ArchiveDatabase;
  let pool: pg.Pool;
  const undo = useCleanup("each");
  beforeAll(async () => void ({ pool } = db = await createArchiveDatabase()));
  afterAll(() => db?.drop());

  /** An outbox of a prefix of its own, and its writer on `writerPool`; closed after the test. */
  /** `waiting`: records in the outbox before the writer starts, so that its first read takes them as one batch. */
  async function outboxAndWriter(options: { writerPool?: pg.Pool; retentionDays?: number; retryMs?: number; batchSize?: number; holdMs?: number; now?: () => number; waiting?: ArchiveRecord[] } = {}) {
    const prefix = `test-${randomUUID()}`;
    const redis: RedisClient = createRedis(inject("redisUrl"), "worker", "test-archive-writer");
    const producer: RedisClient = createRedis(inject("redisUrl"), "worker", "test-archive-producer");
    undo.push(() => closeRedis(producer), () => closeRedis(redis), () => producer.del(archiveOutboxKey(prefix)));
    const outbox = createArchiveOutbox(producer, prefix);
    if (options.waiting) await outbox(options.waiting);
    const { logger, lines } = capturedLogger("info");
    const writer: ArchiveWriter = createArchiveWriter({ redis, pool: options.writerPool ?? pool, queuePrefix: prefix, logger, retentionDays: options.retentionDays ?? 30, retryMs: options.retryMs, batchSize: options.batchSize, holdMs: options.holdMs ?? 0, now: options.now });
    // Closed with its connection cut in the same turn: its blocking read ends now, not at the end of its second.
    undo.push(async () => {
      const closed = writer.close();
      redis.disconnect();
      await closed;
    });
    const drained = () => expect.poll(async () => producer.xlen(archiveOutboxKey(prefix))).toBe(0);
    return { prefix, producer, outbox, writer, lines, drained };
  }

  it("when attempts reach the writer, then each is archived once with its route, key without the event id, status, error, outcome and replay id", async () => {
    const { outbox, drained } = await outboxAndWriter();
    const eventId = userEvent().id;
    const receivedAt = Date.now() - 60_000;
    const at = Date.now() - 1000;
    const attempts: ArchiveRecord[] = [
      { kind: "attempt", eventId, receivedAt, route: "crm", key: `${eventId}:1`, at, status: 503, error: "the route answered 503", outcome: "retry" },
      { kind: "attempt", eventId, receivedAt, route: "crm", key: `${eventId}:2`, at: at + 1, status: 200, outcome: "delivered" },
      { kind: "attempt", eventId, receivedAt, route: "crm", key: "replay-7:1", at: at + 2, error: "connect ECONNREFUSED", outcome: "dead_letter", replayId: "replay-7" },
    ];
    const writtenBefore = await writes("written");
    const duplicateBefore = await writes("duplicate");
    await outbox(attempts);
    await drained();
    const rows = await db.query<{ route: string; attempt_key: string; at: Date; status: number | null; error: string | null; outcome: string; replay_id: string | null; arrived_at: Date }>(
      "SELECT route, attempt_key, at, status, error, outcome, replay_id, arrived_at FROM attempts WHERE event_id = $1 ORDER BY at",
      [eventId],
    );
    expect(rows.map((row) => ({ ...row, at: row.at.getTime(), arrived_at: row.arrived_at.getTime() }))).toEqual([
      { route: "crm", attempt_key: ":1", at, status: 503, error: "the route answered 503", outcome: "retry", replay_id: null, arrived_at: receivedAt },
      { route: "crm", attempt_key: ":2", at: at + 1, status: 200, error: null, outcome: "delivered", replay_id: null, arrived_at: receivedAt },
      { route: "crm", attempt_key: "replay-7:1", at: at + 2, status: null, error: "connect ECONNREFUSED", outcome: "dead_letter", replay_id: "replay-7", arrived_at: receivedAt },
    ]);
    expect((await writes("written")) - writtenBefore).toBe(3);

    // The same attempts read again (an outbox entry handled twice): kept once, counted duplicate.
    await outbox(attempts.slice(0, 2));
    await drained();
    expect(await db.query("SELECT 1 FROM attempts WHERE event_id = $1", [eventId])).toHaveLength(3);
    expect((await writes("duplicate")) - duplicateBefore).toBe(2);
    expect((await writes("written")) - writtenBefore).toBe(3);
  });

  it("when events reach the writer, then each row has its arrival, stream (the store's, else the event's own when it is text), entity, routes, and a payload that reads back as the event", async () => {
    const { outbox, drained } = await outboxAndWriter();
    const receivedAt = Date.now() - 5000;
    const given = userEvent({ a0stream: "est_fromTheEventItself00001" });
    const own = userEvent({ a0stream: "est_fromTheEventItself00002" });
    // Neither a stream (from the store or the event) nor an entity.
    const { a0stream: _stream, ...bare } = userEvent();
    const none = { ...bare, data: { object: { name: "no id here" } } };
    // An `a0stream` that is not text (an extension attribute the tenant's rules do not check): no stream.
    const numbered = userEvent({ a0stream: 42 as unknown as string });
    await outbox([
      { kind: "event", event: given, origin: "webhook", streamId: "est_fromTheStore0000000001", receivedAt, routes: ["crm", "audit"] },
      { kind: "event", event: own, origin: "pull", receivedAt: receivedAt + 1, routes: [] },
      { kind: "event", event: none, origin: "reconcile", receivedAt: receivedAt + 2, routes: ["crm"] },
      { kind: "event", event: numbered, origin: "webhook", receivedAt: receivedAt + 3, routes: [] },
    ]);
    await drained();
    const rows = await db.query<{ id: string; arrived_at: Date; type: string; origin: string; stream: string | null; entity: string | null; failed_first: boolean; routes: string[]; payload: Buffer }>(
      "SELECT id, arrived_at, type, origin, stream, entity, failed_first, routes, payload FROM events WHERE id = ANY($1) ORDER BY arrived_at",
      [[given.id, own.id, none.id, numbered.id]],
    );
    expect(rows.map(({ payload: _payload, ...row }) => ({ ...row, arrived_at: row.arrived_at.getTime() }))).toEqual([
      { id: given.id, arrived_at: receivedAt, type: given.type, origin: "webhook", stream: "est_fromTheStore0000000001", entity: (given.data as { object: { user_id: string } }).object.user_id, failed_first: false, routes: ["crm", "audit"] },
      { id: own.id, arrived_at: receivedAt + 1, type: own.type, origin: "pull", stream: "est_fromTheEventItself00002", entity: (own.data as { object: { user_id: string } }).object.user_id, failed_first: false, routes: [] },
      { id: none.id, arrived_at: receivedAt + 2, type: none.type, origin: "reconcile", stream: null, entity: null, failed_first: true, routes: ["crm"] },
      { id: numbered.id, arrived_at: receivedAt + 3, type: numbered.type, origin: "webhook", stream: null, entity: (numbered.data as { object: { user_id: string } }).object.user_id, failed_first: false, routes: [] },
    ]);
    expect(rows.map((row) => decodePayload(row.payload))).toEqual([given, own, none, numbered]);
  });

  it("when an event reaches the writer more than once (twice in one batch, again later at another arrival), then it is archived once at its first arrival, counted written once and duplicate for each repeat", async () => {
    const twice = userEvent();
    const once = userEvent();
    const receivedAt = Date.now() - 5000;
    const writtenBefore = await writes("written");
    const duplicateBefore = await writes("duplicate");
    const { outbox, drained } = await outboxAndWriter({
      waiting: [
        { kind: "event", event: twice, origin: "webhook", receivedAt, routes: ["crm"] },
        { kind: "event", event: once, origin: "webhook", receivedAt, routes: ["crm"] },
        { kind: "event", event: twice, origin: "webhook", receivedAt: receivedAt + 1, routes: ["crm"] },
      ],
    });
    await drained();
    expect((await writes("written")) - writtenBefore).toBe(2);
    expect((await writes("duplicate")) - duplicateBefore).toBe(1);

    // The same event stored again later (a store retried after a Redis fault): another arrival time.
    await outbox([{ kind: "event", event: twice, origin: "webhook", receivedAt: receivedAt + 2, routes: ["crm"] }]);
    await drained();
    expect((await writes("written")) - writtenBefore).toBe(2);
    expect((await writes("duplicate")) - duplicateBefore).toBe(2);
    const rows = await db.query<{ id: string; arrived_at: Date }>("SELECT id, arrived_at FROM events WHERE id = ANY($1)", [[twice.id, once.id]]);
    const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : 1);
    expect(rows.map((row) => ({ id: row.id, arrived_at: row.arrived_at.getTime() })).sort(byId)).toEqual([{ id: twice.id, arrived_at: receivedAt }, { id: once.id, arrived_at: receivedAt }].sort(byId));
  });

  it("when Postgres refuses one record of a batch for its data, then the batch's other records are archived and counted written once (none as a duplicate), and the refused one is set aside as poison", async () => {
    const event = userEvent();
    const receivedAt = Date.now() - 5000;
    const writtenBefore = await writes("written");
    const duplicateBefore = await writes("duplicate");
    const poisonBefore = await writes("poison");
    // An arrival no partition takes (ten days ahead), which Postgres refuses: the attempt's INSERT fails after the event's, in the same batch.
    const { drained, lines } = await outboxAndWriter({
      waiting: [
        { kind: "event", event, origin: "webhook", receivedAt, routes: ["crm"] },
        { kind: "attempt", eventId: event.id, receivedAt: receivedAt + 10 * 86_400_000, route: "crm", key: `${event.id}:1`, at: receivedAt + 1, status: 500, error: "the route answered", outcome: "retry" },
      ],
    });
    await drained();
    expect(await db.query("SELECT 1 FROM events WHERE id = $1", [event.id])).toHaveLength(1);
    expect(await db.query("SELECT 1 FROM attempts WHERE event_id = $1", [event.id])).toHaveLength(0);
    expect((await writes("written")) - writtenBefore).toBe(1);
    expect((await writes("duplicate")) - duplicateBefore).toBe(0);
    expect((await writes("poison")) - poisonBefore).toBe(1);
    const refused = lines.filter((line) => String(line.msg).startsWith("archive: Postgres refused an outbox record"));
    expect(refused.map((line) => ({ level: line.level, outboxId: typeof line.outboxId, code: (line.err as { code?: string } | undefined)?.code }))).toEqual([{ level: 50, outboxId: "string", code: "23514" }]);
    expect(lines.filter((line) => String(line.msg).startsWith("archive unavailable"))).toHaveLength(0);
  });

  it("when another process's writer is archiving an event (its transaction still open), then a writer given the same event at another arrival waits for it and archives the event once", async () => {
    const event = userEvent();
    const receivedAt = Date.now() - 5000;
    const duplicateBefore = await writes("duplicate");
    // The other writer, mid-batch: it holds the writers' lock (as write-archive-batch.ts takes it) and has inserted the event, not yet committed.
    const other = new pg.Client({ connectionString: db.url });
    await other.connect();
    undo.push(() => other.end());
    await other.query("BEGIN");
    await other.query("SELECT pg_advisory_xact_lock(hashtext('streamkeeper archive writer'))");
    await other.query("INSERT INTO events (arrived_at, id, type, origin, failed_first, routes) VALUES ($1, $2, $3, 'webhook', false, '{}')", [new Date(receivedAt), event.id, event.type]);
    const { outbox, producer, prefix } = await outboxAndWriter();
    await outbox([{ kind: "event", event, origin: "webhook", receivedAt: receivedAt + 1000, routes: [] }]);
    // Until this writer waits for the lock (or, if it took none, has archived the event already).
    const waitingForTheLock = async () =>
      (await db.query("SELECT 1 FROM pg_locks l JOIN pg_database d ON d.oid = l.database WHERE l.locktype = 'advisory' AND NOT l.granted AND d.datname = current_database()")).length > 0;
    await expect.poll(async () => (await waitingForTheLock()) || (await producer.xlen(archiveOutboxKey(prefix))) === 0).toBe(true);
    await other.query("COMMIT");
    await expect.poll(async () => producer.xlen(archiveOutboxKey(prefix))).toBe(0);
    const rows = await db.query<{ arrived_at: Date }>("SELECT arrived_at FROM events WHERE id = $1", [event.id]);
    expect(rows.map((row) => row.arrived_at.getTime())).toEqual([receivedAt]);
    expect((await writes("duplicate")) - duplicateBefore).toBe(1);
  });

  it("when an event's entity was erased after it arrived but before it reached the archive, then it is archived without its payload; one arrived after the erasure keeps it", async () => {
    const { outbox, drained } = await outboxAndWriter();
    const entity = `auth0|erased-${randomUUID()}`;
    const before = userEvent({ data: { object: { user_id: entity } } });
    const after = userEvent({ data: { object: { user_id: entity } } });
    const erasedAt = Date.now() - 10_000;
    await db.query("INSERT INTO erasures (entity, erased_at) VALUES ($1, $2)", [entity, new Date(erasedAt)]);
    await outbox([
      { kind: "event", event: before, origin: "webhook", receivedAt: erasedAt - 1000, routes: [] },
      { kind: "event", event: after, origin: "webhook", receivedAt: erasedAt + 1000, routes: [] },
    ]);
    await drained();
    const rows = await db.query<{ id: string; payload: Buffer | null }>("SELECT id, payload FROM events WHERE entity = $1", [entity]);
    expect(rows).toHaveLength(2);
    expect(rows.find((row) => row.id === before.id)!.payload).toBeNull();
    expect(decodePayload(rows.find((row) => row.id === after.id)!.payload!)).toEqual(after);
  });

  it("when the service's clock runs ahead of Postgres's and an event of the entity arrived just before the erasure (still in the outbox), then it is archived without its payload", async () => {
    const { outbox, drained } = await outboxAndWriter();
    const entity = `auth0|ahead-${randomUUID()}`;
    const event = userEvent({ data: { object: { user_id: entity } } });
    // The service's clock 30 s ahead of Postgres's: the event arrived 1 s before the erasure by it.
    const ahead = Date.now() + 30_000;
    expect((await forgetEntity(pool, entity, ahead)).erased).toBe(0);
    // A second erasure from a process whose clock is behind does not move the first one's time back.
    expect((await forgetEntity(pool, entity, Date.now() - 60_000)).erased).toBe(0);
    await outbox([{ kind: "event", event, origin: "webhook", receivedAt: ahead - 1000, routes: [] }]);
    await drained();
    expect(await db.query("SELECT payload FROM events WHERE id = $1", [event.id])).toEqual([{ payload: null }]);
  });

  it("when a record older than ARCHIVE_RETENTION_DAYS reaches the writer, then it is counted expired, warned, not archived, and removed from the outbox", async () => {
    const { outbox, drained, lines } = await outboxAndWriter({ retentionDays: 30 });
    const old = userEvent();
    const recent = userEvent();
    const expiredBefore = await writes("expired");
    await outbox([
      { kind: "event", event: old, origin: "webhook", receivedAt: Date.now() - 32 * day, routes: [] },
      { kind: "attempt", eventId: old.id, receivedAt: Date.now() - 32 * day, route: "crm", key: `${old.id}:1`, at: Date.now(), outcome: "delivered" },
      { kind: "event", event: recent, origin: "webhook", receivedAt: Date.now() - 29 * day, routes: [] },
    ]);
    await drained();
    expect((await writes("expired")) - expiredBefore).toBe(2);
    expect((await db.query<{ id: string }>("SELECT id FROM events WHERE id = ANY($1)", [[old.id, recent.id]])).map((row) => row.id)).toEqual([recent.id]);
    const warned = lines.filter((line) => line.level === 40 && String(line.msg).includes("older than ARCHIVE_RETENTION_DAYS"));
    expect(warned.map((line) => line.eventId)).toEqual([old.id, old.id]);
  });

  it("when more records wait than one batch holds, then every one is archived, batch after batch", async () => {
    const { outbox, drained } = await outboxAndWriter({ batchSize: 4 });
    const events = Array.from({ length: 11 }, () => userEvent());
    await outbox(events.map((event) => ({ kind: "event", event, origin: "webhook", receivedAt: Date.now(), routes: [] })));
    await drained();
    expect(await db.query("SELECT 1 FROM events WHERE id = ANY($1)", [events.map((event) => event.id)])).toHaveLength(11);
  });

  it("when Postgres cannot be reached, then the writer says so once, counts each failed try, keeps the records in the outbox, and archives them once it answers, saying so", async () => {
    const proxy = await startCuttableProxy(new URL(db.url));
    undo.push(() => proxy.close());
    const viaProxy = new pg.Pool({ connectionString: proxy.url, max: 2, connectionTimeoutMillis: 2000 });
    viaProxy.on("error", () => {});
    undo.push(() => viaProxy.end());
    proxy.cut();
    const errorsBefore = await writes("error");
    const { outbox, writer, lines, producer, prefix, drained } = await outboxAndWriter({ writerPool: viaProxy, retryMs: 50 });
    const events = Array.from({ length: 3 }, () => userEvent());
    await outbox(events.map((event) => ({ kind: "event", event, origin: "webhook", receivedAt: Date.now(), routes: [] })));
    await expect.poll(async () => (await writes("error")) - errorsBefore).toBeGreaterThanOrEqual(3);
    expect(writer.available()).toBe(false);
    expect(await producer.xlen(archiveOutboxKey(prefix))).toBe(3);
    expect(lines.filter((line) => String(line.msg).startsWith("archive unavailable"))).toHaveLength(1);
    expect(lines.find((line) => String(line.msg).startsWith("archive unavailable"))!.level).toBe(50);

    proxy.restore();
    await drained();
    expect(await db.query("SELECT 1 FROM events WHERE id = ANY($1)", [events.map((event) => event.id)])).toHaveLength(3);
    expect(writer.available()).toBe(true);
    expect(lines.filter((line) => line.msg === "archive available again: writing what waited in the outbox")).toHaveLength(1);
    expect(lines.filter((line) => String(line.msg).startsWith("archive unavailable"))).toHaveLength(1);
  });

  it("when the writer is closed, then it stops: records added afterwards wait in the outbox for the next writer", async () => {
    const { outbox, writer, drained, producer, prefix } = await outboxAndWriter();
    const first = userEvent();
    await outbox([{ kind: "event", event: first, origin: "webhook", receivedAt: Date.now(), routes: [] }]);
    await drained();
    await writer.close();
    const later = userEvent();
    await outbox([{ kind: "event", event: later, origin: "webhook", receivedAt: Date.now(), routes: [] }]);
    // The closed writer's blocking read ended with close(): nothing reads the outbox any more.
    expect(await producer.xlen(archiveOutboxKey(prefix))).toBe(1);
    expect(await db.query("SELECT 1 FROM events WHERE id = $1", [later.id])).toHaveLength(0);
  });

  it("when an outbox entry cannot be read as a record, then it is said at error level with its outbox id and why, counted poison and removed, and the records after it are archived", async () => {
    const { outbox, drained, lines, producer, prefix } = await outboxAndWriter();
    const poisonBefore = await writes("poison");
    const notJson = await producer.xadd(archiveOutboxKey(prefix), "*", "r", "{not json");
    const noRecord = await producer.xadd(archiveOutboxKey(prefix), "*", "x", "1");
    const after = userEvent();
    await outbox([{ kind: "event", event: after, origin: "webhook", receivedAt: Date.now(), routes: [] }]);
    await drained();
    const said = lines.filter((line) => String(line.msg).startsWith("archive: an outbox record cannot be read"));
    expect(said.map((line) => ({ level: line.level, outboxId: line.outboxId, why: line.why }))).toEqual([
      { level: 50, outboxId: notJson, why: "the record is not JSON" },
      { level: 50, outboxId: noRecord, why: "the entry has no record field" },
    ]);
    expect((await writes("poison")) - poisonBefore).toBe(2);
    expect(await db.query("SELECT 1 FROM events WHERE id = $1", [after.id])).toHaveLength(1);
  });

  it("when a record arrived at the start of the oldest day ARCHIVE_RETENTION_DAYS keeps, then it is archived; one a millisecond older is expired", async () => {
    const clock = Date.now();
    const kept = userEvent();
    const older = userEvent();
    const expiredBefore = await writes("expired");
    const { drained } = await outboxAndWriter({
      now: () => clock,
      retentionDays: 30,
      waiting: [
        { kind: "event", event: kept, origin: "webhook", receivedAt: oldestKept(clock, 30), routes: [] },
        { kind: "event", event: older, origin: "webhook", receivedAt: oldestKept(clock, 30) - 1, routes: [] },
      ],
    });
    await drained();
    expect((await db.query<{ id: string }>("SELECT id FROM events WHERE id = ANY($1)", [[kept.id, older.id]])).map((row) => row.id)).toEqual([kept.id]);
    expect((await writes("expired")) - expiredBefore).toBe(1);
  });

  it("when Postgres goes away while the writer holds a batch, then the batch stays in the outbox and is archived once Postgres answers, the writer available again", async () => {
    const proxy = await startCuttableProxy(new URL(db.url));
    undo.push(() => proxy.close());
    const viaProxy = new pg.Pool({ connectionString: proxy.url, max: 2, connectionTimeoutMillis: 2000 });
    viaProxy.on("error", () => {});
    undo.push(() => viaProxy.end());
    const { outbox, writer, lines, producer, prefix, drained } = await outboxAndWriter({ writerPool: viaProxy, retryMs: 50 });
    const first = userEvent();
    await outbox([{ kind: "event", event: first, origin: "webhook", receivedAt: Date.now(), routes: [] }]);
    await drained();
    expect(writer.available()).toBe(true);

    proxy.cut();
    const errorsBefore = await writes("error");
    const poisonBefore = await writes("poison");
    const events = Array.from({ length: 3 }, () => userEvent());
    await outbox(events.map((event) => ({ kind: "event", event, origin: "webhook", receivedAt: Date.now(), routes: [] })));
    // And an entry of two attempts, read and refused as often as the events.
    const attempt = (n: number): AttemptRecord => ({ kind: "attempt", eventId: first.id, receivedAt: Date.now(), route: "crm", key: `${first.id}:${n}`, at: Date.now(), status: 503, outcome: "retry" });
    await outbox([attempt(1), attempt(2)]);
    await expect.poll(async () => (await writes("error")) - errorsBefore).toBeGreaterThanOrEqual(2);
    expect(writer.available()).toBe(false);
    expect(await producer.xlen(archiveOutboxKey(prefix))).toBe(4);
    // Said once, with Postgres's own words.
    const said = lines.filter((line) => String(line.msg).startsWith("archive unavailable"));
    expect(said.map((line) => typeof (line.err as { message?: unknown } | undefined)?.message)).toEqual(["string"]);

    proxy.restore();
    // Archived by this writer's own look at what it holds, not handed over by the claim of
    // records idle for 30 s (create-archive-writer.ts), which would rescue them too, later.
    await expect.poll(async () => producer.xlen(archiveOutboxKey(prefix)), { timeout: 25_000 }).toBe(0);
    expect(await db.query("SELECT 1 FROM events WHERE id = ANY($1)", [events.map((event) => event.id)])).toHaveLength(3);
    expect(await db.query("SELECT 1 FROM attempts WHERE event_id = $1", [first.id])).toHaveLength(2);
    expect(await db.query("SELECT 1 FROM attempts WHERE event_id = $1", [first.id])).toHaveLength(2);
    expect(writer.available()).toBe(true);
    expect(lines.filter((line) => line.msg === "archive available again: writing what waited in the outbox")).toHaveLength(1);
    expect((await writes("poison")) - poisonBefore).toBe(0);
  });

  describe("a route's first delivery, kept in its event's row", () => {
    const delivered = (eventId: string, receivedAt: number, route: string, at: number, key = `${eventId}:1`): AttemptRecord => ({ kind: "attempt", eventId, receivedAt, route, key, at, status: 200, outcome: "delivered" });
    const rowsOfAttempts = async (eventId: string) => Number((await db.query<{ n: string }>("SELECT count(*) AS n FROM attempts WHERE event_id = $1", [eventId]))[0]!.n);
    const everyAttempt = async (eventId: string) => Number((await db.query<{ n: string }>("SELECT count(*) AS n FROM every_attempt WHERE event_id = $1", [eventId]))[0]!.n);
    const keptInRow = async (eventId: string) => (await db.query<{ delivered: string | null }>("SELECT delivered FROM events WHERE id = $1", [eventId]))[0]?.delivered;

    it("when an event and its routes' attempts reach the writer together, then a lone delivery is kept in the event's row, a retried route's attempts are rows, and search, the outcome filters and the timeline read both", async () => {
      const event = userEvent();
      const receivedAt = Date.now() - 60_000;
      const writtenBefore = await writes("written");
      const { drained } = await outboxAndWriter({
        waiting: [
          { kind: "event", event, origin: "webhook", receivedAt, routes: ["crm", "erp"] },
          delivered(event.id, receivedAt, "crm", receivedAt + 20),
          { kind: "attempt", eventId: event.id, receivedAt, route: "erp", key: `${event.id}:1`, at: receivedAt + 30, status: 503, error: "the route answered 503", outcome: "retry" },
          delivered(event.id, receivedAt, "erp", receivedAt + 1030, `${event.id}:2`),
        ],
      });
      await drained();
      expect(await keptInRow(event.id)).toBe("crm:20:200");
      expect(await rowsOfAttempts(event.id)).toBe(2);
      expect((await writes("written")) - writtenBefore).toBe(4);

      expect((await eventsMatching(pool, { id: event.id }, 10)).events.map((found) => found.outcomes)).toEqual([{ crm: "delivered", erp: "delivered" }]);
      const found = async (route: string, outcome: string) => (await eventsMatching(pool, { id: event.id, route, outcome }, 10)).events.length;
      expect([await found("crm", "delivered"), await found("crm", "pending"), await found("crm", "retry"), await found("erp", "retry"), await found("erp", "delivered")]).toEqual([1, 0, 0, 1, 1]);
      const timeline = await timelineOfEvent(pool, event.id);
      expect(timeline?.routes).toEqual([
        { route: "crm", outcome: "delivered", attempts: [{ at: new Date(receivedAt + 20).toISOString(), status: 200, outcome: "delivered" }] },
        {
          route: "erp",
          outcome: "delivered",
          attempts: [
            { at: new Date(receivedAt + 30).toISOString(), status: 503, error: "the route answered 503", outcome: "retry" },
            { at: new Date(receivedAt + 1030).toISOString(), status: 200, outcome: "delivered" },
          ],
        },
      ]);
    });

    it("when an event comes with a lone dead letter, a replay's delivery and a delivery to a route it was not queued for, then each is a row of attempts; a delivery without a status is kept in the row without one", async () => {
      const event = userEvent();
      const receivedAt = Date.now() - 60_000;
      const { drained } = await outboxAndWriter({
        waiting: [
          { kind: "event", event, origin: "webhook", receivedAt, routes: ["crm", "erp", "ops"] },
          { kind: "attempt", eventId: event.id, receivedAt, route: "crm", key: `${event.id}:1`, at: receivedAt + 10, status: 400, error: "the route answered 400", outcome: "dead_letter" },
          { ...delivered(event.id, receivedAt, "erp", receivedAt + 20, "replay-1:1"), replayId: "replay-1" },
          delivered(event.id, receivedAt, "moved-here", receivedAt + 30),
          { kind: "attempt", eventId: event.id, receivedAt, route: "ops", key: `${event.id}:1`, at: receivedAt + 40, outcome: "delivered" },
        ],
      });
      await drained();
      expect(await keptInRow(event.id)).toBe("ops:40:");
      expect(await rowsOfAttempts(event.id)).toBe(3);
      const routes = (await timelineOfEvent(pool, event.id))?.routes;
      expect(routes?.find((route) => route.route === "ops")).toEqual({ route: "ops", outcome: "delivered", attempts: [{ at: new Date(receivedAt + 40).toISOString(), outcome: "delivered" }] });
      expect(routes?.map((route) => [route.route, route.outcome])).toEqual([["crm", "dead_letter"], ["erp", "delivered"], ["ops", "delivered"], ["moved-here", "delivered"]]);
    });

    it("when a delivery's record reaches the outbox after its event's was read, then the writer keeps the event back for it (holdMs) and the delivery still goes into its row; one that comes after the hold is a row of attempts", async () => {
      const { outbox, drained } = await outboxAndWriter({ holdMs: 1500 });
      const soon = userEvent();
      const late = userEvent();
      const receivedAt = Date.now() - 1000;
      await outbox([
        { kind: "event", event: soon, origin: "webhook", receivedAt, routes: ["crm"] },
        { kind: "event", event: late, origin: "webhook", receivedAt, routes: ["crm"] },
      ]);
      await new Promise((ok) => setTimeout(ok, 300));
      await outbox([delivered(soon.id, receivedAt, "crm", receivedAt + 40)]);
      await drained();
      expect(await keptInRow(soon.id)).toBe("crm:40:200");
      expect(await rowsOfAttempts(soon.id)).toBe(0);
      // Written without its delivery once the hold is over; the delivery after it is a row.
      expect(await keptInRow(late.id)).toBeNull();
      await outbox([delivered(late.id, receivedAt, "crm", receivedAt + 2000)]);
      await drained();
      expect(await rowsOfAttempts(late.id)).toBe(1);
      expect((await eventsMatching(pool, { id: late.id }, 10)).events[0]?.outcomes).toEqual({ crm: "delivered" });
    });

    it("when a batch with a delivery kept in its event's row is read again, whole or the delivery alone, then the delivery is archived once, counted duplicate", async () => {
      const { outbox, drained } = await outboxAndWriter();
      const event = userEvent();
      const receivedAt = Date.now() - 1000;
      const records: ArchiveRecord[] = [{ kind: "event", event, origin: "webhook", receivedAt, routes: ["crm"] }, delivered(event.id, receivedAt, "crm", receivedAt + 15)];
      await outbox(records);
      await drained();
      expect(await keptInRow(event.id)).toBe("crm:15:200");
      const duplicateBefore = await writes("duplicate");
      await outbox(records);
      await drained();
      await outbox(records.slice(1));
      await drained();
      expect(await everyAttempt(event.id)).toBe(1);
      expect((await writes("duplicate")) - duplicateBefore).toBe(3);
    });

    it("when an id archived before arrives again with its delivery, then the delivery is a row of attempts: never lost with the event row that is not written", async () => {
      const { outbox, drained } = await outboxAndWriter();
      const event = userEvent();
      const first = Date.now() - 5000;
      await outbox([{ kind: "event", event, origin: "webhook", receivedAt: first, routes: ["crm"] }]);
      await drained();
      const again = first + 3000;
      await outbox([{ kind: "event", event, origin: "reconcile", receivedAt: again, routes: ["crm"] }, delivered(event.id, again, "crm", again + 10)]);
      await drained();
      expect(await keptInRow(event.id)).toBeNull();
      expect(await rowsOfAttempts(event.id)).toBe(1);
    });

    it("when a route's retry was archived as a row before its delivery was kept in the event's row (two writers), then the route's outcome is the later one by time: delivered", async () => {
      const { outbox, drained } = await outboxAndWriter();
      const event = userEvent();
      const receivedAt = Date.now() - 5000;
      await outbox([{ kind: "attempt", eventId: event.id, receivedAt, route: "crm", key: `${event.id}:1`, at: receivedAt + 10, status: 500, error: "the route answered 500", outcome: "retry" }]);
      await drained();
      await outbox([{ kind: "event", event, origin: "webhook", receivedAt, routes: ["crm"] }, delivered(event.id, receivedAt, "crm", receivedAt + 900, `${event.id}:2`)]);
      await drained();
      expect(await keptInRow(event.id)).toBe("crm:900:200");
      expect((await eventsMatching(pool, { id: event.id }, 10)).events[0]?.outcomes).toEqual({ crm: "delivered" });
      expect((await timelineOfEvent(pool, event.id))?.routes[0]?.attempts.map((attempt) => attempt.outcome)).toEqual(["retry", "delivered"]);
    });

    it("when a delivery was archived as a row (another writer took its record apart from its event's) and its event then comes with it, then it is kept once", async () => {
      const event = userEvent();
      const receivedAt = Date.now() - 1000;
      const delivery = delivered(event.id, receivedAt, "crm", receivedAt + 30);
      await writeArchiveBatch(pool, [delivery]);
      await writeArchiveBatch(pool, [{ kind: "event", event, origin: "webhook", receivedAt, routes: ["crm"] }, delivery]);
      expect(await keptInRow(event.id)).toBeNull();
      expect(await everyAttempt(event.id)).toBe(1);
    });

    it("when a delivery's status or time is not a whole number, then it is never kept in the event's row: the event is archived, the attempt set aside as before, and every_attempt still reads", async () => {
      const event = userEvent();
      const receivedAt = Date.now() - 1000;
      const poisonBefore = await writes("poison");
      const { drained } = await outboxAndWriter({ waiting: [{ kind: "event", event, origin: "webhook", receivedAt, routes: ["crm"] }, { ...delivered(event.id, receivedAt, "crm", receivedAt + 30), status: 200.5 }] });
      await drained();
      expect(await keptInRow(event.id)).toBeNull();
      expect((await writes("poison")) - poisonBefore).toBe(1);
      expect(await everyAttempt(event.id)).toBe(0);
    });

    it("when the writer's clock (retention's) stands still, then an event kept back is still written once the hold is over", async () => {
      const frozen = Date.now();
      const { prefix, producer, outbox } = await outboxAndWriter({ holdMs: 200, now: () => frozen });
      const event = userEvent();
      await outbox([{ kind: "event", event, origin: "webhook", receivedAt: frozen - 1000, routes: ["crm"] }]);
      // Within the hold and a blocking read, not at the 30 s after which XAUTOCLAIM would take it back from itself.
      await expect.poll(async () => producer.xlen(archiveOutboxKey(prefix)), { timeout: 10_000 }).toBe(0);
      expect(await keptInRow(event.id)).toBeNull();
    });

    it("when one outbox entry holds attempts of an event kept back and of one archived before, then the entry stays until the kept one is written, and a writer stopped in between leaves both to the next, each archived once", async () => {
      const { prefix, producer, outbox, writer } = await outboxAndWriter({ holdMs: 60_000 });
      const before = userEvent();
      const kept = userEvent();
      const receivedAt = Date.now() - 1000;
      await outbox([{ kind: "event", event: before, origin: "webhook", receivedAt, routes: ["crm"] }, delivered(before.id, receivedAt, "crm", receivedAt + 10)]);
      await expect.poll(async () => keptInRow(before.id)).toBe("crm:10:200");
      await outbox([{ kind: "event", event: kept, origin: "webhook", receivedAt, routes: ["crm", "erp"] }]);
      // One entry (one call's attempts): a retry of the archived event, and the kept event's first delivery (it still awaits erp).
      const retry: AttemptRecord = { kind: "attempt", eventId: before.id, receivedAt, route: "crm", key: `${before.id}:2`, at: receivedAt + 20, status: 503, error: "the route answered 503", outcome: "retry" };
      await outbox([retry, delivered(kept.id, receivedAt, "crm", receivedAt + 30)]);
      expect(await producer.xlen(archiveOutboxKey(prefix))).toBe(2);
      await expect.poll(async () => rowsOfAttempts(before.id)).toBe(1);
      // The retry is written; its entry stays, with the delivery kept back in it.
      expect(await producer.xlen(archiveOutboxKey(prefix))).toBe(2);

      // Stopped (a crash or a restart): the next writer of this consumer reads its pending entries again.
      await writer.close();
      const duplicateBefore = await writes("duplicate");
      const redis: RedisClient = createRedis(inject("redisUrl"), "worker", "test-archive-next-writer");
      const next = createArchiveWriter({ redis, pool, queuePrefix: prefix, logger: capturedLogger("info").logger, retentionDays: 30, holdMs: 60_000 });
      undo.push(async () => {
        const closed = next.close();
        redis.disconnect();
        await closed;
      });
      await expect.poll(async () => producer.xlen(archiveOutboxKey(prefix)), { timeout: 10_000 }).toBe(0);
      expect(await keptInRow(kept.id)).toBe("crm:30:200");
      expect(await rowsOfAttempts(before.id)).toBe(1);
      expect((await writes("duplicate")) - duplicateBefore).toBe(1);
    });

    it("when two writers on one outbox keep events back for their deliveries, then every event and every delivery is archived once, whichever writer took it", async () => {
      const { prefix, outbox, drained } = await outboxAndWriter({ holdMs: 1000, batchSize: 7 });
      const redis: RedisClient = createRedis(inject("redisUrl"), "worker", "test-archive-second-writer");
      const second = createArchiveWriter({ redis, pool, queuePrefix: prefix, logger: capturedLogger("info").logger, retentionDays: 30, batchSize: 7, holdMs: 1000, consumer: "second" });
      undo.push(async () => {
        const closed = second.close();
        redis.disconnect();
        await closed;
      });
      const events = Array.from({ length: 60 }, () => userEvent());
      const receivedAt = Date.now() - 1000;
      for (const [index, event] of events.entries()) {
        await outbox([{ kind: "event", event, origin: "webhook", receivedAt, routes: ["crm"] }]);
        if (index % 4 === 0) await new Promise((ok) => setTimeout(ok, 10));
        await outbox([delivered(event.id, receivedAt, "crm", receivedAt + index)]);
      }
      await drained();
      const ids = events.map((event) => event.id);
      expect((await db.query<{ n: string }>("SELECT count(*) AS n FROM events WHERE id = ANY($1)", [ids]))[0]!.n).toBe("60");
      const perEvent = await db.query<{ n: string }>("SELECT count(*) AS n FROM every_attempt WHERE event_id = ANY($1) GROUP BY event_id", [ids]);
      expect(perEvent.map((row) => row.n)).toEqual(ids.map(() => "1"));
    });
  });
});

/** A TCP proxy to Postgres on a port of its own: `cut()` drops every connection and refuses new ones, `restore()` accepts again on the same port. */
async function startCuttableProxy(target: URL): Promise<{ url: string; cut(): void; restore(): void; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let down = false;
  const server: Server = createServer((client) => {
    if (down) return void client.destroy();
    const upstream = connect(Number(target.port || 5432), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("error", () => {});
      socket.on("close", () => sockets.delete(socket));
    }
    client.pipe(upstream).pipe(client);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const port = (server.address() as AddressInfo).port;
  const url = new URL(target);
  url.hostname = "127.0.0.1";
  url.port = String(port);
  return {
    url: url.toString(),
    cut() {
      down = true;
      for (const socket of sockets) socket.destroy();
    },
    restore() {
      down = false;
    },
    close: () => new Promise<void>((ok) => {
      down = true;
      for (const socket of sockets) socket.destroy();
      server.close(() => ok());
    }),
  };
}
