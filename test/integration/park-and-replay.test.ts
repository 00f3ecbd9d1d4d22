import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CloudEvent } from "../../src/events/cloud-event.js";
import { runCli } from "../chaos/run-cli.js";
import { createTestDatabase, type TestDatabase } from "../helpers/archive-database.js";
import { adminHeaders } from "../helpers/credentials.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";

const adminToken = "park-token";
const floodSize = 200;
const dayMs = 86_400_000;

/**
 * `routes park` and `replay --outcome parked` (docs/operating.md, "A stream came back with
 * a day of events"): a day-old flood on a rate-limited route, parked mid-flood, then sent
 * by a replay. Every flooded event reaches the downstream exactly once: before the park
 * (in flight or already delivered) or by the replay, never both.
 */
describe("routes park, then replay --outcome parked", () => {
  let db: TestDatabase;
  let sink: SinkServer;
  let service: TestService;
  let dir: string;
  let cliEnv: Record<string, string>;

  beforeAll(async () => {
    db = await createTestDatabase();
    sink = await startSinkServer();
    dir = await mkdtemp(join(tmpdir(), "sk-park-"));
    await writeFile(join(dir, "routes.json"), JSON.stringify([{ name: "crm", match: "*", url: sink.url, concurrency: 2, ratePerSecond: 40, freshnessSeconds: 5 }]));
    service = await startTestService({ ARCHIVE: "on", ARCHIVE_DATABASE_URL: db.url, ROUTES_FILE: join(dir, "routes.json"), ADMIN_TOKEN: adminToken });
    cliEnv = { ADMIN_URL: service.adminUrl, ADMIN_TOKEN: adminToken, LOG_LEVEL: "silent" };
  });
  afterAll(async () => {
    await service?.close();
    await sink?.close();
    await db?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const sent = (ids: Set<string>) => sink.requests.filter((request) => ids.has(String(request.headers["webhook-id"])));

  it("when a flood is parked mid-way and replayed, then each flooded event is delivered once, and live events went on meanwhile", async () => {
    const now = Date.now();
    const flood: CloudEvent[] = Array.from({ length: floodSize }, (_, index) => userEvent({ time: new Date(now - dayMs + index * 1000).toISOString() }));
    const floodIds = new Set(flood.map((event) => event.id));
    expect((await service.post("/webhooks/est_38ANnv8pQhqsZrX2VFbftv", JSON.stringify(flood), { "content-type": "application/cloudevents-batch+json" })).status).toBe(202);
    await sink.until(() => sent(floodIds).length >= 10);

    // Mid-flood, the operator sees it waiting in the late lane: metrics, GET /admin/routes, the overview.
    const metrics = await (await fetch(`${service.adminUrl}/metrics`)).text();
    expect(Number(/^streamkeeper_route_waiting\{route="crm",lane="late"\} (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThan(floodSize / 2);
    expect(metrics).toMatch(/^streamkeeper_route_waiting\{route="crm",lane="live"\} 0$/m);
    const listed = (await (await fetch(`${service.adminUrl}/admin/routes`, { headers: adminHeaders(adminToken) })).json()) as { routes: Array<{ name: string; lanes: { live: number; late: number } }> };
    expect(listed.routes[0]!.lanes.late).toBeGreaterThan(floodSize / 2);
    const overview = (await (await fetch(`${service.adminUrl}/admin/overview`, { headers: adminHeaders(adminToken) })).json()) as { routes: Array<{ lanes: { live: number; late: number } }> };
    expect(overview.routes[0]!.lanes).toMatchObject({ live: 0, late: expect.any(Number) });
    expect(overview.routes[0]!.lanes.late).toBeGreaterThan(0);

    const park = await runCli(["routes", "park", "crm", "--json"], cliEnv);
    expect({ code: park.code, stderr: park.stderr }).toEqual({ code: 0, stderr: "" });
    const answer = JSON.parse(park.stdout) as { parked: number; route: string; olderThan: string; since: string };
    expect(answer.route).toBe("crm");
    expect(answer.parked, "parked mid-flood: some were delivered first, most were waiting").toBeGreaterThan(floodSize / 2);
    expect(answer.parked).toBeLessThan(floodSize);

    // A live event still goes; the flood's remainder (those in flight at the park) lands.
    const live = userEvent();
    expect((await service.post("/webhooks/est_38ANnv8pQhqsZrX2VFbftv", JSON.stringify(live))).status).toBe(202);
    await sink.until((requests) => requests.some((request) => request.headers["webhook-id"] === live.id));
    await expect.poll(() => sent(floodIds).length + answer.parked, { timeout: 30_000 }).toBe(floodSize);
    const before = new Set(sent(floodIds).map((request) => String(request.headers["webhook-id"])));
    expect(before.size).toBe(floodSize - answer.parked);

    // The archive lists exactly the parked ones as such (the outcomes reach it through its outbox).
    const parkedIds = async () => {
      const search = await runCli(["events", "search", "--route", "crm", "--outcome", "parked", "--limit", "1000", "--json"], cliEnv);
      return search.stdout.trim().split("\n").filter(Boolean).map((line) => (JSON.parse(line) as { id: string }).id);
    };
    await expect.poll(async () => (await parkedIds()).length, { timeout: 30_000 }).toBe(answer.parked);
    const parked = new Set(await parkedIds());
    expect([...parked].filter((id) => before.has(id) || !floodIds.has(id))).toEqual([]);

    const replay = await runCli(["replay", "--route", "crm", "--outcome", "parked", "--since", answer.since], cliEnv);
    expect(replay.stderr).toBe("");
    expect(replay.stdout).toMatch(new RegExp(`^replay rpl_\\w+ done: ${answer.parked} matched, ${answer.parked} sent, ${answer.parked} delivered, 0 failed\\n$`));
    const replayed = sent(parked);
    expect(replayed.every((request) => request.headers["x-streamkeeper-origin"] === "replay")).toBe(true);
    // Every flooded event once, and no other event sent again.
    const ids = sink.requests.map((request) => String(request.headers["webhook-id"]));
    expect(ids.filter((id) => floodIds.has(id)).sort()).toEqual([...floodIds].sort());
    expect(new Set(ids).size).toBe(ids.length);

    // The freshness objective reads live events only: the day-old flood (late lane) and its
    // replay (below it) missed nothing, though each came a day after its time.
    const after = await (await fetch(`${service.adminUrl}/metrics`)).text();
    expect(Number(/^streamkeeper_delivery_lag_seconds_count\{route="crm",origin="webhook",lane="late"\} (\d+)$/m.exec(after)?.[1])).toBe(floodSize);
    expect(after).toMatch(/^streamkeeper_delivery_lag_seconds_count\{route="crm",origin="webhook",lane="live"\} 1$/m);
    expect(after).not.toMatch(/^streamkeeper_delivery_freshness_missed_total\{route="crm"\} [1-9]/m);
  }, 120_000);

  it("when park is asked of an unknown route, or with a bad time, then one error line says what to change (exit 2)", async () => {
    const unknown = await runCli(["routes", "park", "nowhere"], cliEnv);
    expect({ code: unknown.code, stderr: unknown.stderr }).toEqual({ code: 2, stderr: "error: no configured route nowhere: the routes are crm\n" });
    const bad = await runCli(["routes", "park", "crm", "--older-than", "yesterday"], cliEnv);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^error: --older-than "yesterday": give /);
    const body = await fetch(`${service.adminUrl}/admin/routes/crm/park`, { method: "POST", headers: { ...adminHeaders(adminToken), "content-type": "application/json" }, body: JSON.stringify({ olderThan: 5 }) });
    expect(body.status).toBe(400);
    expect(((await body.json()) as { detail: string }).detail).toMatch(/^olderThan: must be a time in ISO 8601/);
  });
});

describe("routes park with the archive off", () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService({ ARCHIVE: "off", DOWNSTREAM_URL: "http://127.0.0.1:9/", ADMIN_TOKEN: adminToken });
  });
  afterAll(() => service?.close());

  it("when the archive is off, then park is refused with exit 2: parked events would be kept nowhere", async () => {
    const run = await runCli(["routes", "park", "default"], { ADMIN_URL: service.adminUrl, ADMIN_TOKEN: adminToken, LOG_LEVEL: "silent" });
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 2, stderr: "error: the archive is off (ARCHIVE=off): parked events would be kept nowhere; turn the archive on to park, or let the late lane drain\n" });
  });
});
