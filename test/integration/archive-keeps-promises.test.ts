import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { inject } from "vitest";
import type { CloudEvent } from "../../src/events/cloud-event.js";
import { fromArchiveText } from "../../src/archive/archive-text.js";
import { randomUUID } from "node:crypto";
import { archiveOutboxKey, createArchiveOutbox } from "../../src/archive/archive-outbox.js";
import { createArchivePool } from "../../src/archive/create-archive-pool.js";
import { createArchiveWriter } from "../../src/archive/create-archive-writer.js";
import { archiveWrites } from "../../src/metrics/archive-metrics.js";
import { closeRedis, createRedis } from "../../src/redis/redis-connection.js";
import { capturedLogger } from "../helpers/captured-logger.js";
import { startFreezingProxy } from "../helpers/start-freezing-proxy.js";
import { tenantId, userEvent } from "../helpers/fixtures.js";
import { createArchiveDatabase, createTestDatabase, type TestDatabase } from "../helpers/archive-database.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";
import { until } from "../helpers/until.js";

const adminToken = "archive-promises-token";

/** A downstream that refuses every event with 422, echoing the contact's email in its answer (as some APIs do). */
async function startEchoingRefuser(): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      const email = (JSON.parse(body || "{}") as { data?: { object?: { email?: string } } }).data?.object?.email;
      res.writeHead(422, { "content-type": "application/json" }).end(JSON.stringify({ error: `contact ${email} is not valid here` }));
    });
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, close: () => new Promise((ok) => server.close(() => ok())) };
}

/** Every file of the database's own folder (tables, TOAST, indexes; not the WAL), after a checkpoint wrote what the buffers held. */
async function databaseFiles(db: TestDatabase): Promise<Buffer[]> {
  await db.query("CHECKPOINT");
  const [row] = await db.query<{ dir: string }>("SELECT current_setting('data_directory') || '/base/' || (SELECT oid FROM pg_database WHERE datname = current_database()) AS dir");
  const names = await readdir(row!.dir);
  return Promise.all(names.map((name) => readFile(join(row!.dir, name)).catch(() => Buffer.alloc(0))));
}

/**
 * The archive keeps the queue's promises (README.md, The archive): durable commits whatever
 * the database's setting, every acknowledged event archived whatever its ids hold, bad
 * search input a 400, and an erasure that leaves nothing readable in Postgres's files or
 * Redis.
 */
describe("archive: the promises it keeps", () => {
  let db: TestDatabase;
  let refuser: Awaited<ReturnType<typeof startEchoingRefuser>>;
  let service: TestService;
  let redis: Redis;
  const admin = (path: string, init: RequestInit = {}) => fetch(`${service.adminUrl}${path}`, { ...init, headers: { authorization: `Bearer ${adminToken}`, ...(init.headers ?? {}) } });
  const archivedCount = async () => Number((await db.query<{ n: string }>("SELECT count(*) AS n FROM events"))[0]!.n);

  beforeAll(async () => {
    db = await createTestDatabase();
    // The database's own setting says asynchronous commits (as the embedded server's did):
    // the writer's commits must be durable anyway.
    const [database] = await db.query<{ name: string }>("SELECT current_database() AS name");
    await db.query(`ALTER DATABASE ${database!.name} SET synchronous_commit = off`);
    refuser = await startEchoingRefuser();
    service = await startTestService({ ARCHIVE: "on", ARCHIVE_DATABASE_URL: db.url, DOWNSTREAM_URL: refuser.url, ADMIN_TOKEN: adminToken });
    redis = new Redis(inject("redisUrl"));
    // Which synchronous_commit each archive statement ran under (a statement trigger on the partitioned table).
    await until("the archive's schema", async () => (await db.query("SELECT 1 FROM pg_tables WHERE tablename = 'events'")).length === 1 || undefined);
    await db.query("CREATE TABLE commit_settings (setting text NOT NULL)");
    await db.query("CREATE FUNCTION note_commit_setting() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO commit_settings VALUES (current_setting('synchronous_commit')); RETURN NULL; END $$");
    await db.query("CREATE TRIGGER note_commit_setting AFTER INSERT ON events FOR EACH STATEMENT EXECUTE FUNCTION note_commit_setting()");
  });
  afterAll(async () => {
    redis?.disconnect();
    await service?.close();
    await refuser?.close();
    await db?.drop();
  });

  it("when the database's setting is asynchronous commit, then the writer's batches commit durably all the same", async () => {
    const before = await archivedCount();
    expect((await service.post("/webhooks/est_38ANnv8pQhqsZrX2VFbftv", JSON.stringify(userEvent()))).status).toBe(202);
    await expect.poll(archivedCount).toBe(before + 1);
    const settings = (await db.query<{ setting: string }>("SELECT setting FROM commit_settings")).map((row) => row.setting);
    expect(settings.length).toBeGreaterThan(0);
    expect(new Set(settings)).toEqual(new Set(["on"]));
  });

  it("when acknowledged events hold a NUL or a lone surrogate in their ids, stream or user, then each is archived and found by its exact id", async () => {
    const odd: CloudEvent[] = [
      userEvent({ id: `evt_nul\u0000${tenantId("evt")}` }),
      userEvent({ id: `~sk:"${tenantId("evt")}"` }), // shaped like an encoded id: still its own
      userEvent({ a0stream: `est_lone\uD800${tenantId("est")}` }),
      userEvent({ type: "user.updated" }),
      userEvent(),
    ];
    (odd[3]!.data as { object: { user_id: string } }).object.user_id = `auth0|nul\u0000${tenantId("evt")}`;
    (odd[4]!.data as { object: { user_id: string } }).object.user_id = `auth0|lone\uDC00${tenantId("evt")}`;
    const before = await archivedCount();
    for (const event of odd) expect((await service.post("/webhooks", JSON.stringify(event))).status).toBe(202);
    await expect.poll(archivedCount).toBe(before + odd.length);

    for (const event of odd) {
      const found = (await (await admin(`/admin/events?id=${encodeURIComponent(event.id)}`)).json()) as { events: Array<{ id: string }> };
      expect(found.events.map((row) => row.id)).toEqual([event.id]);
    }
    const nulUser = (odd[3]!.data as { object: { user_id: string } }).object.user_id;
    const byUser = (await (await admin(`/admin/events?entity=${encodeURIComponent(nulUser)}`)).json()) as { events: Array<{ id: string; entity: string }> };
    expect(byUser.events).toMatchObject([{ id: odd[3]!.id, entity: nulUser }]);
    const timeline = (await (await admin(`/admin/events/${encodeURIComponent(odd[0]!.id)}`)).json()) as { timeline?: { type: string } };
    expect(timeline.timeline?.type).toBe("user.updated");
    // routes try reads the archived event by the same exact id.
    const tried = await admin("/admin/routes/default/try", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ eventId: odd[0]!.id }) });
    expect(tried.status).toBe(200);
    expect(await tried.json()).toMatchObject({ match: true });
    // A lone surrogate cannot travel in a URL: read back as stored, it decodes to the exact text.
    const streams = (await db.query<{ stream: string }>("SELECT stream FROM events WHERE stream LIKE '~sk:%'")).map((row) => fromArchiveText(row.stream));
    expect(streams).toContain(odd[2]!.a0stream);
    const entities = (await db.query<{ entity: string }>("SELECT entity FROM events WHERE entity LIKE '~sk:%'")).map((row) => fromArchiveText(row.entity));
    expect(entities).toContain((odd[4]!.data as { object: { user_id: string } }).object.user_id);
  });

  it("when search or replay input cannot be a time, a cursor or an id, then it answers 400 naming it, never 503", async () => {
    const cursor = (text: string) => Buffer.from(text).toString("base64url");
    const cases: Array<[string, RegExp]> = [
      ["/admin/events?since=0000-01-01T00:00:00Z", /^since: must be a time from 1970 on/],
      ["/admin/events?until=1969-12-31T23:59:59Z", /^until: must be a time from 1970 on/],
      [`/admin/events?after=${cursor("999999999999999999|evt_x")}`, /^after: give the `next` value/],
      [`/admin/events?after=${cursor("1700000000000|evt_\u0000x")}`, /^after: give the `next` value/],
      [`/admin/events?after=${cursor("-5|evt_x")}`, /^after: give the `next` value/],
      ["/admin/replays/rpl_%00", /^a parameter holds a value the archive cannot take/],
    ];
    for (const [path, message] of cases) {
      const answer = await admin(path);
      expect(answer.status, path).toBe(400);
      expect(answer.headers.get("retry-after"), path).toBeNull();
      expect(((await answer.json()) as { detail: string }).detail, path).toMatch(message);
    }
  });

  it("when an entity is forgotten, then no byte of its payloads stays in the database's files, its error texts, or Redis (jobs and their events)", async () => {
    const user = `auth0|${tenantId("evt")}`;
    const email = `erase-${tenantId("evt")}@example.com`;
    const events = Array.from({ length: 3 }, () => userEvent());
    for (const event of events) Object.assign((event.data as { object: Record<string, string> }).object, { user_id: user, email });
    for (const event of events) expect((await service.post("/webhooks/est_38ANnv8pQhqsZrX2VFbftv", JSON.stringify(event))).status).toBe(202);
    // Each refused at once (422): a dead letter whose error text echoes the request.
    await expect.poll(async () => (await db.query("SELECT 1 FROM attempts WHERE outcome = 'dead_letter' AND error LIKE $1", [`%${email}%`])).length).toBe(3);
    const payloads = (await db.query<{ payload: Buffer }>("SELECT payload FROM events WHERE entity = $1", [user])).map((row) => row.payload);
    expect(payloads).toHaveLength(3);
    const queueKeys = async () => (await redis.keys(`*${service.config.env.QUEUE_PREFIX}*`)).filter((key) => !key.includes("archive"));
    const redisHolds = async (text: string) => {
      for (const key of await queueKeys()) {
        const type = await redis.type(key);
        const values = type === "hash" ? Object.values(await redis.hgetall(key)) : type === "string" ? [await redis.get(key)] : type === "list" ? await redis.lrange(key, 0, -1) : type === "zset" ? await redis.zrange(key, "0", "-1") : type === "set" ? await redis.smembers(key) : type === "stream" ? (await redis.xrange(key, "-", "+")).flatMap(([, fields]) => fields) : [];
        if (values.some((value) => value?.includes(text))) return key;
      }
      return undefined;
    };
    expect(await redisHolds(email), "the dead letters hold the payload before").toBeDefined();
    const chunks = payloads.map((payload) => payload.subarray(Math.floor(payload.length / 2) - 12, Math.floor(payload.length / 2) + 12));
    expect(chunks.every((chunk) => chunk.length === 24)).toBe(true);
    const before = await databaseFiles(db);
    for (const chunk of chunks) expect(before.some((file) => file.includes(chunk)), "the table files hold the payloads before").toBe(true);

    const answer = await admin(`/admin/entities/${encodeURIComponent(user)}`, { method: "DELETE" });
    expect(await answer.json()).toMatchObject({ entity: user, erased: 3 });

    expect(await db.query("SELECT 1 FROM attempts WHERE error LIKE $1", [`%${email}%`])).toEqual([]);
    // Its statuses and outcomes stay.
    expect((await db.query("SELECT 1 FROM attempts a JOIN events e ON e.id = a.event_id WHERE e.entity = $1 AND a.status = 422 AND a.outcome = 'dead_letter'", [user])).length).toBe(3);
    // The old row versions are gone from the table files too (not only from what a query sees).
    const files = await databaseFiles(db);
    for (const chunk of chunks) expect(files.some((file) => file.includes(chunk))).toBe(false);
    expect(files.some((file) => file.includes(Buffer.from(email)))).toBe(false);
    expect(await redisHolds(email)).toBeUndefined();
  });
});

describe("archive: a Postgres that hangs", () => {
  it("when Postgres stops answering (connections open, nothing said), then the writer says so once within its statement timeout, counts it, keeps the records, and archives them once it answers", async () => {
    const db = await createArchiveDatabase();
    const target = new URL(db.url);
    const proxy = await startFreezingProxy({ host: target.hostname, port: Number(target.port) });
    const pool = createArchivePool(db.url.replace(`${target.hostname}:${target.port}`, new URL(proxy.url).host), 500, "test-hung");
    pool.on("error", () => {});
    const prefix = `test-${randomUUID()}`;
    const redis = createRedis(inject("redisUrl"), "worker", "test-hung-writer");
    const producer = createRedis(inject("redisUrl"), "worker", "test-hung-producer");
    const { logger, lines } = capturedLogger("info");
    const writer = createArchiveWriter({ redis, pool, queuePrefix: prefix, logger, retentionDays: 30, retryMs: 200 });
    const outbox = createArchiveOutbox(producer, prefix);
    const record = (event: CloudEvent) => ({ kind: "event" as const, event, origin: "webhook" as const, receivedAt: Date.now(), routes: [] });
    const errors = async () => (await archiveWrites.get()).values.find((value) => value.labels.result === "error")?.value ?? 0;
    try {
      const first = userEvent();
      await outbox([record(first)]);
      await expect.poll(async () => (await db.query("SELECT 1 FROM events WHERE id = $1", [first.id])).length).toBe(1);
      const errorsBefore = await errors();
      proxy.freeze();
      const held = [userEvent(), userEvent()];
      await outbox(held.map(record));
      await until("the writer saying the archive is unavailable", () => lines.some((line) => String(line.msg).startsWith("archive unavailable")) || undefined);
      expect(await errors()).toBeGreaterThan(errorsBefore);
      expect(writer.available()).toBe(false);
      expect(await producer.xlen(archiveOutboxKey(prefix))).toBe(2);
      proxy.thaw();
      await expect.poll(async () => (await db.query("SELECT 1 FROM events WHERE id = ANY($1)", [held.map((event) => event.id)])).length).toBe(2);
      expect(lines.filter((line) => String(line.msg).startsWith("archive unavailable"))).toHaveLength(1);
    } finally {
      proxy.thaw();
      await writer.close();
      await closeRedis(redis);
      await producer.del(archiveOutboxKey(prefix));
      await closeRedis(producer);
      await pool.end().catch(() => {});
      await proxy.close();
      await db.drop();
    }
  });
});
