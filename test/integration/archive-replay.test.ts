import { randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { archiveOutboxKey } from "../../src/archive/archive-outbox.js";
import type { CloudEvent } from "../../src/events/cloud-event.js";
import { startServiceProcess, type ServiceProcess } from "../helpers/start-service-process.js";
import { createTestDatabase, type TestDatabase } from "../helpers/archive-database.js";
import { userEvent } from "../helpers/fixtures.js";
import { serviceProcessEnv } from "../helpers/service-process-env.js";
import { startSinkServer, type SinkAnswer, type SinkServer } from "../helpers/sink-server.js";
import { startTestService } from "../helpers/start-test-service.js";
import { until } from "./sweep-test-kit.js";
import { webhookAuthorization as authorization } from "../helpers/credentials.js";

const adminToken = "replay-admin-token";

describe("archive: replay", () => {
  let db: TestDatabase;
  let redis: Redis;
  let crm: SinkServer;
  let backfill: SinkServer;
  let dir: string;
  const prefix = `test-${randomUUID()}`;
  const processes: ServiceProcess[] = [];
  const forgotten = "auth0|replayforget000000000000001";
  let updated: CloudEvent[] = [];
  let since = "";
  /** After the events above were sent: a window up to here is one the archive already holds. */
  let sentBy = "";

  const env = () => serviceProcessEnv({ QUEUE_PREFIX: prefix, ARCHIVE: "on", ARCHIVE_DATABASE_URL: db.url, ROUTES_FILE: join(dir, "routes-after.json"), DATA_DIR: dir, ADMIN_TOKEN: adminToken, DISPATCH_LOCK_DURATION_MS: "3000", SHUTDOWN_TIMEOUT_MS: "2000", LOG_LEVEL: "info" });
  const admin = (service: { adminUrl: string }, path: string, init: RequestInit = {}) =>
    fetch(`${service.adminUrl}${path}`, { ...init, headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json", ...(init.headers ?? {}) } });

  beforeAll(async () => {
    db = await createTestDatabase();
    redis = new Redis(inject("redisUrl"));
    crm = await startSinkServer();
    backfill = await startSinkServer();
    dir = await mkdtemp(join(tmpdir(), "sk-replay-"));
    await writeFile(join(dir, "routes-before.json"), JSON.stringify([{ name: "crm", match: "*", url: crm.url }]));
    await writeFile(join(dir, "routes-after.json"), JSON.stringify([{ name: "crm", match: "*", url: crm.url }, { name: "backfill", match: ["user.updated"], url: backfill.url, concurrency: 1 }]));

    // Before the backfill route existed: 30 user.updated, 10 user.created, 5 of a user later erased.
    const before = await startTestService({ QUEUE_PREFIX: prefix, ARCHIVE: "on", ARCHIVE_DATABASE_URL: db.url, ROUTES_FILE: join(dir, "routes-before.json") });
    since = new Date(Date.now() - 1000).toISOString();
    updated = Array.from({ length: 30 }, () => userEvent());
    const created = Array.from({ length: 10 }, () => userEvent({ type: "user.created" }));
    const erased = Array.from({ length: 5 }, () => {
      const event = userEvent({ type: "user.deleted" });
      (event.data as { object: { user_id: string } }).object.user_id = forgotten;
      return event;
    });
    for (const event of [...updated, ...created, ...erased]) expect((await before.post("/webhooks/est_38ANnv8pQhqsZrX2VFbftv", JSON.stringify(event))).status).toBe(202);
    // The writer makes the schema once it runs: until then the table is not there (42P01), which is no failure.
    const delivered = () => db.query<{ n: string }>("SELECT count(*) AS n FROM every_attempt WHERE outcome = 'delivered'").catch((error: { code?: string }) => (error.code === "42P01" ? [{ n: "0" }] : Promise.reject(error as Error)));
    await until("the 45 events are archived as delivered", async () => Number((await delivered())[0]!.n) === 45);
    await before.close();
    sentBy = new Date().toISOString();
  });
  afterAll(async () => {
    for (const service of processes) await service.kill();
    await crm?.close();
    await backfill?.close();
    await db?.drop();
    redis?.disconnect();
    await rm(dir, { recursive: true, force: true });
  });

  it("when a window filtered by type is replayed to a route created afterwards and its worker is killed mid-replay, then every matching event arrives with origin replay, live events first, none skipped", async () => {
    // Slow enough that the replay is still running when the worker is killed.
    backfill.answer = () => ({ delayMs: 40 });
    const first = await startServiceProcess("all", env());
    processes.push(first);
    const started = await admin(first, "/admin/replays", { method: "POST", body: JSON.stringify({ route: "backfill", since, type: "user.updated" }) });
    expect(started.status).toBe(202);
    const { replayId, matched } = (await started.json()) as { replayId: string; matched: number };
    expect(matched).toBe(30);
    // Without until, the window ends when the replay started: the live events below are not in it.
    const startedAt = Date.now();
    const window = (await (await admin(first, `/admin/replays/${replayId}`)).json()) as { until?: string };
    expect(Date.parse(window.until ?? "")).toBeLessThanOrEqual(startedAt);

    await backfill.untilReceived(3);
    const live = Array.from({ length: 3 }, () => userEvent());
    for (const event of live) {
      const answer = await fetch(`${first.publicUrl}/webhooks/est_38ANnv8pQhqsZrX2VFbftv`, { method: "POST", body: JSON.stringify(event), headers: { authorization, "content-type": "application/json" } });
      expect(answer.status).toBe(202);
    }
    await backfill.until((requests) => live.every((event) => requests.some((request) => request.headers["webhook-id"] === event.id)));
    const replayedSoFar = backfill.requests.filter((request) => request.headers["x-streamkeeper-origin"] === "replay").length;
    expect(replayedSoFar).toBeLessThan(30);
    // Killed with a replayed delivery in flight (held by the route) and nothing in the archive's
    // outbox: a record the killed writer had read but not written would be taken over only after
    // 30 s (create-archive-writer.ts), and the second process's replay would wait for it.
    let letGo = () => {};
    const held = new Promise<SinkAnswer>((answer) => (letGo = () => answer({})));
    backfill.answer = () => held;
    const heldFrom = backfill.requests.length;
    await backfill.untilReceived(heldFrom + 1);
    await until("the archive has the live events' deliveries and its outbox is empty", async () => {
      const archived = Number((await db.query<{ n: string }>("SELECT count(*) AS n FROM every_attempt WHERE outcome = 'delivered' AND event_id = ANY($1)", [live.map((event) => event.id)]))[0]!.n);
      // Each live event delivered to both routes.
      return archived === 2 * live.length && (await redis.xlen(archiveOutboxKey(prefix))) === 0;
    });
    await first.kill();
    backfill.answer = () => ({ delayMs: 40 });
    letGo();

    const second = await startServiceProcess("all", env());
    processes.push(second);
    await expect.poll(async () => ((await (await admin(second, `/admin/replays/${replayId}`)).json()) as { state: string }).state).toBe("done");
    // The first page was queued before the kill; the second process went on from the checkpoint
    // (said through its stdout, which may arrive after the state read over HTTP).
    await expect.poll(() => second.output()).toContain("replay resumes from its checkpoint");
    await backfill.until((requests) => updated.every((event) => requests.some((request) => request.headers["webhook-id"] === event.id && request.headers["x-streamkeeper-origin"] === "replay")));
    const replayed = backfill.requests.filter((request) => request.headers["x-streamkeeper-origin"] === "replay");
    const ids = replayed.map((request) => request.headers["webhook-id"] as string);
    // Exactly the window's user.updated events; at most the one delivery in flight at the kill is sent again (same webhook-id).
    expect([...new Set(ids)].sort()).toEqual(updated.map((event) => event.id).sort());
    expect(ids.length - new Set(ids).size).toBeLessThanOrEqual(1);
    for (const request of replayed) expect((JSON.parse(request.body) as CloudEvent).type).toBe("user.updated");
    // Live events went before the replay's remaining ones (a lower priority).
    const lastReplayed = Math.max(...replayed.map((request) => request.index));
    for (const event of live) expect(backfill.requests.find((request) => request.headers["webhook-id"] === event.id)!.index).toBeLessThan(lastReplayed);
    await expect.poll(async () => ((await (await admin(second, `/admin/replays/${replayId}`)).json()) as { delivered: number }).delivered).toBe(30);
    const replayedLive = backfill.requests.filter((request) => request.headers["x-streamkeeper-origin"] === "replay" && live.some((event) => event.id === request.headers["webhook-id"]));
    expect(replayedLive).toEqual([]);
  });

  it("when an erased entity's window is replayed, then nothing of it is sent and the replay says it skipped them", async () => {
    const service = processes.at(-1)!;
    const erase = await admin(service, `/admin/entities/${encodeURIComponent(forgotten)}`, { method: "DELETE" });
    expect(await erase.json()).toMatchObject({ entity: forgotten, erased: 5 });
    const before = crm.requests.length;
    // A window that ended before the test: the replay need not wait out the archive's margin for the last seconds (archive-outbox.ts).
    const started = await admin(service, "/admin/replays", { method: "POST", body: JSON.stringify({ route: "crm", since, until: sentBy, entity: forgotten }) });
    expect(started.status).toBe(202);
    const { replayId, matched, erased } = (await started.json()) as { replayId: string; matched: number; erased: number };
    expect({ matched, erased }).toEqual({ matched: 5, erased: 5 });
    await expect.poll(async () => (await (await admin(service, `/admin/replays/${replayId}`)).json()) as object).toMatchObject({ state: "done", sent: 0, skipped: 5 });
    expect(crm.requests.length).toBe(before);
  });

  it("when a replay is asked badly, then it is refused saying what to change", async () => {
    const service = processes.at(-1)!;
    const ask = async (body: object) => {
      const answer = await admin(service, "/admin/replays", { method: "POST", body: JSON.stringify(body) });
      return { status: answer.status, detail: ((await answer.json()) as { detail: string }).detail };
    };
    expect(await ask({ route: "nowhere", since })).toEqual({ status: 400, detail: "no route named nowhere; the routes are crm, backfill" });
    const old = await ask({ route: "crm", since: "2020-01-01T00:00:00Z" });
    expect(old.status).toBe(400);
    expect(old.detail).toMatch(/older than the archive keeps: it holds events from .* on \(ARCHIVE_RETENTION_DAYS=30\)/);
    expect(await ask({ route: "crm", since: "last tuesday" })).toEqual({ status: 400, detail: "since: must be a duration back from now (90m, 6h, 7d), a date (2026-11-25: its midnight UTC) or a time in ISO 8601 (2026-11-25T06:35:17Z)" });
    expect((await ask({ route: "crm", since, until: since })).detail).toBe(`until (${since}) must be after since (${since}): give a later until, or an earlier since`);
    expect(await ask({ route: "crm\u0000", since })).toEqual({ status: 400, detail: "route: must not hold a NUL character (\\u0000): no route name does" });
    expect(await ask({ route: "crm", since: "1969-07-20T20:17:40Z" })).toEqual({ status: 400, detail: "since: must be a time from 1970 on, e.g. 2026-11-25T06:35:17Z" });

    // One replay per route at a time.
    const slow = await admin(service, "/admin/replays", { method: "POST", body: JSON.stringify({ route: "crm", since, rate: 1 }) });
    expect(slow.status).toBe(202);
    const { replayId } = (await slow.json()) as { replayId: string };
    const second = await ask({ route: "crm", since });
    expect(second.status).toBe(409);
    expect(second.detail).toContain(replayId);
    expect((await admin(service, `/admin/replays/${replayId}`, { method: "DELETE" })).status).toBe(200);
    expect(((await (await admin(service, `/admin/replays/${replayId}`)).json()) as { state: string }).state).toBe("cancelled");
  });
});
