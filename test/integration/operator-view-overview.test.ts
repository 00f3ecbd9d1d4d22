import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Overview } from "../../src/admin/describe-overview.js";
import { capturedLogger } from "../helpers/captured-logger.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";
import { useCleanup } from "../helpers/cleanup.js";
import { adminHeaders, basicAuthorization } from "../helpers/credentials.js";

const adminToken = "overview-admin-token";
const bearer = adminHeaders(adminToken);

/**
 * GET /admin/overview and the page's files against the real service (role all), a real
 * Redis and real downstreams: a fast route with an objective it meets, a slow one (events
 * already 3 s old when they arrive) that misses it, and one with no objective.
 */
describe("operator view: the overview endpoint and the page's files", () => {
  const cleanup = useCleanup("all", { quiet: true });
  let service: TestService;
  let sink: SinkServer;
  const captured = capturedLogger();

  async function overview(): Promise<Overview> {
    const answer = await fetch(`${service.adminUrl}/admin/overview`, { headers: bearer });
    expect(answer.status).toBe(200);
    return (await answer.json()) as Overview;
  }

  it("when events are delivered, then each route shows its deliveries and its freshness against its objective", async () => {
    sink = await startSinkServer();
    cleanup.push(() => sink.close());
    const dir = await mkdtemp(join(tmpdir(), "sk-overview-"));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    const routesFile = join(dir, "routes.yaml");
    await writeFile(
      routesFile,
      [
        `- { name: crm, match: "user.*", url: "${sink.url}crm", freshnessSeconds: 30 }`,
        `- { name: audit, match: "*", url: "${sink.url}audit", freshnessSeconds: 600, ratePerSecond: 50 }`,
        `- { name: search, match: "organization.*", url: "${sink.url}search" }`,
        `- { name: latest, match: "user.*", url: "${sink.url}latest", dropStale: true }`,
      ].join("\n"),
    );
    service = await startTestService({ ROUTES_FILE: routesFile, ADMIN_TOKEN: adminToken }, "all", captured.logger);
    cleanup.push(() => service.close());

    // Ten live events: five fresh, five dated 120 s ago (so late for crm's 30 s, in time for
    // audit's 600 s). The objectives are far from both: a loaded machine's stall cannot move one across.
    const oldAt = Date.now() - 120_000;
    const old = new Date(oldAt).toISOString();
    // A user each: on the dropStale route (latest) two events of one user delivered out of
    // order under load would leave one skipped as stale, and this test counts deliveries.
    const events = Array.from({ length: 10 }, (_, index) => {
      const event = userEvent(index < 5 ? {} : { time: old });
      return { ...event, data: { object: { ...(event.data as { object: object }).object, user_id: `auth0|overview-${index}` } } };
    });
    for (const event of events) expect((await service.post("/webhooks", JSON.stringify(event))).status).toBe(202);
    await sink.until((requests) => requests.length === 30);
    // No old event can be older than this when its route answered (the buckets are within 10%).
    const oldestLagSeconds = (Date.now() - oldAt) / 1000;

    // The counts reach Redis within a second of the deliveries (create-freshness-recorder.ts).
    // The day's current hour is read again every 10 s (create-freshness-reader.ts).
    await expect.poll(async () => (await overview()).routes.find((route) => route.name === "crm")?.freshness.lastDay?.count, { timeout: 60_000 }).toBe(10);
    const seen = await overview();
    const crm = seen.routes.find((route) => route.name === "crm")!;
    const audit = seen.routes.find((route) => route.name === "audit")!;
    const search = seen.routes.find((route) => route.name === "search")!;
    expect(crm.freshness).toMatchObject({ objectiveSeconds: 30, last5m: { count: 10, missed: 5, verdict: "missed" }, lastDay: { count: 10, missed: 5, verdict: "missed" } });
    // p99 is one of the old half's, 120 s old when posted and a little more when delivered.
    expect(crm.freshness.last5m!.p99).toBeGreaterThanOrEqual(108);
    expect(crm.freshness.last5m!.p99).toBeLessThanOrEqual(oldestLagSeconds * 1.1);
    expect(crm.freshness.last5m!.p50).toBeLessThan(30);
    expect(audit.freshness).toMatchObject({ objectiveSeconds: 600, last5m: { count: 10, missed: 0, verdict: "met" } });
    expect(audit.ratePerSecond).toBe(50);
    expect(search.freshness).toMatchObject({ objectiveSeconds: null, last5m: { count: 0, verdict: "no_objective" } });
    expect(crm.deliveredPerMinute).toBeGreaterThan(0);
    expect(search.deliveredPerMinute).toBe(0);
    for (const route of [crm, audit, search]) expect(route).toMatchObject({ backlog: 0, deadLetters: 0, circuit: "closed", staleLastDay: 0 });
    expect(seen.recovery.reconcile).toMatchObject({ waiting: 0, active: 0, failed: 0 });
    // No tenant settings: no sweep, and the page says why.
    expect(seen.sweep).toMatchObject({ on: false, whyOff: expect.stringMatching(/TENANT_DOMAIN/) });
    expect(seen.streams).toEqual([]);
    expect(seen.unavailable).toEqual([]);

    // The Prometheus side: the histogram per route and origin, and the misses counter.
    const metrics = await (await fetch(`${service.adminUrl}/metrics`)).text();
    expect(metrics).toContain('streamkeeper_delivery_lag_seconds_count{route="crm",origin="webhook",lane="live"} 10');
    expect(metrics).toContain('streamkeeper_delivery_freshness_missed_total{route="crm"} 5');
    expect(metrics).not.toContain('streamkeeper_delivery_freshness_missed_total{route="audit"}');
  });

  it("when a dropStale route skips an older state of a user, then the route shows the stale skip", async () => {
    const user = "auth0|overview-stale";
    const newer = userEvent({ data: { object: { user_id: user, updated_at: new Date().toISOString() } } });
    const older = userEvent({ data: { object: { user_id: user, updated_at: new Date(Date.now() - 3_600_000).toISOString() } } });
    expect((await service.post("/webhooks", JSON.stringify(newer))).status).toBe(202);
    await sink.until((requests) => requests.some((request) => request.url === "/latest" && request.body.includes(newer.id)));
    expect((await service.post("/webhooks", JSON.stringify(older))).status).toBe(202);
    await expect.poll(async () => (await overview()).routes.find((route) => route.name === "latest")?.staleLastDay, { timeout: 60_000 }).toBe(1);
    expect(sink.requests.some((request) => request.url === "/latest" && request.body.includes(older.id))).toBe(false);
    expect((await overview()).routes.find((route) => route.name === "crm")?.staleLastDay).toBe(0);
  });

  it("when a browser opens /admin/ without a login, then it is asked for one; with it, the page and its files come from the service", async () => {
    const anonymous = await fetch(`${service.adminUrl}/admin/`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("www-authenticate")).toMatch(/^Basic /);
    expect((await fetch(`${service.adminUrl}/admin/overview`)).status).toBe(401);

    const basic = { authorization: basicAuthorization("operator", adminToken) };
    const page = await fetch(`${service.adminUrl}/admin/`, { headers: basic });
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
    const html = await page.text();
    expect(html).toContain("<h1>Streamkeeper operator view</h1>");
    expect(html).toContain('href="queues"');
    for (const file of ["operator-view.js", "operator-view.css"]) {
      const asset = await fetch(`${service.adminUrl}/admin/${file}`, { headers: basic });
      expect(asset.status).toBe(200);
      expect((await asset.text()).length).toBeGreaterThan(100);
    }
    // Without the slash, the page's relative links would break: redirected.
    const bare = await fetch(`${service.adminUrl}/admin`, { headers: basic, redirect: "manual" });
    expect(bare.status).toBe(308);
    expect(bare.headers.get("location")).toBe("/admin/");
  });

  it("when a write is asked of the admin API, then it is logged with what was asked", async () => {
    const answer = await fetch(`${service.adminUrl}/admin/reconcile`, {
      method: "POST",
      headers: { ...bearer, "content-type": "application/json" },
      body: JSON.stringify({ eventIds: ["evt_q273LFcsfrNovuzswy8qBz"] }),
    });
    expect(answer.status).toBeLessThan(500);
    const logged = captured.lines.find((line) => line.msg === "admin write asked");
    expect(logged).toMatchObject({ level: 30, method: "POST", path: "/admin/reconcile", asked: { eventIds: ["evt_q273LFcsfrNovuzswy8qBz"] } });
    expect(JSON.stringify(captured.lines)).not.toContain(adminToken);
  });

  it("when a long id list is asked, then its count and first ids are logged, not the whole list; a waiting CLI's outcome polls are reads and not logged as writes", async () => {
    const ids = Array.from({ length: 500 }, (_, index) => `evt_audit${String(index).padStart(17, "0")}`);
    const before = captured.lines.length;
    const answer = await fetch(`${service.adminUrl}/admin/reconcile`, { method: "POST", headers: { ...bearer, "content-type": "application/json" }, body: JSON.stringify({ eventIds: ids }) });
    expect(answer.status).toBeLessThan(500);
    const poll = await fetch(`${service.adminUrl}/admin/reconcile/outcomes`, { method: "POST", headers: { ...bearer, "content-type": "application/json" }, body: JSON.stringify({ jobIds: ["x"] }) });
    expect(poll.status).toBeLessThan(500);
    const logged = captured.lines.slice(before).filter((line) => line.msg === "admin write asked");
    expect(logged).toEqual([expect.objectContaining({ path: "/admin/reconcile", asked: { eventIds: { count: 500, first: ids.slice(0, 5) } } })]);
  });
});
