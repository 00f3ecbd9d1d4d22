import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "../../src/emulator/start-emulator.js";
import { createTestDatabase, type TestDatabase } from "../helpers/archive-database.js";
import { capturedLogger } from "../helpers/captured-logger.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkRequest, type SinkServer } from "../helpers/sink-server.js";
import { startTestService, testCredentials, type TestService } from "../helpers/start-test-service.js";
import { createStream, emit, settled, tenantEnv } from "../integration/emulator-test-kit.js";
import { useCleanup, type Cleanup } from "../helpers/cleanup.js";
import { startFrontDoor } from "../helpers/start-front-door.js";
import { adminHeaders } from "../helpers/credentials.js";
import { chromiumPath, openChromium } from "../helpers/open-chromium.js";
import { operatorViewProbe } from "../helpers/operator-view-page.js";

const adminToken = "operator-view-archive-admin-token";
// The page's shortest refresh: each wait below for "a refresh after it" lasts one or two of them.
const refreshSeconds = 1;
const alice = "auth0|alice00000000000000000001";
const bob = "auth0|bob000000000000000000002";

function eventOf(user: string, type: string) {
  const event = userEvent({ type });
  (event.data as { object: { user_id: string } }).object.user_id = user;
  return event;
}

const webhookIds = (requests: SinkRequest[]) => requests.map((request) => request.headers["webhook-id"]);

/** A headless Chromium logged in to the admin port, recording every console error and failed request of the page. */
function openBrowser(cleanup: Cleanup, consoleErrors: string[]): Promise<Page> {
  return openChromium(cleanup, consoleErrors, { username: "operator", password: adminToken });
}

/**
 * The operator view's search, timeline, replay and dead-letter retry in a real headless
 * Chromium, against the whole service with the archive on (the run's Postgres, a database
 * of this file's own), the tenant emulator and two downstreams: `crm` (204) and `billing`
 * (400 for alice's first event until the test fixes it, 204 otherwise). The tests run in
 * order on one page: the first posts the events the others search, replay and retry.
 */
describe.skipIf(!existsSync(chromiumPath))("operate: the operator view's search, timeline, replay and dead-letter retry in a real browser", () => {
  const cleanup = useCleanup("all", { quiet: true });

  let db: TestDatabase;
  let emulator: Emulator;
  let service: TestService;
  let crm: SinkServer;
  let billing: SinkServer;
  let page: Page;
  const consoleErrors: string[] = [];
  const aliceEvents = [eventOf(alice, "user.created"), eventOf(alice, "user.updated"), eventOf(alice, "user.updated")];
  const bobEvent = eventOf(bob, "user.updated");
  const refused = aliceEvents[0]!;
  let billingFixed = false;
  const log = capturedLogger();

  const { overview, refreshes, withinOneRefresh, text } = operatorViewProbe(() => ({ adminUrl: service.adminUrl, page }), adminToken);
  /**
   * A replay's row once the service counts all of it delivered (the archive records the
   * attempts shortly after the sink answered) and the page refreshed after that: "done"
   * means every event was queued; delivered and failed come from the archived attempts.
   */
  async function replayRowOnceDelivered(replayId: string, count: number): Promise<string[]> {
    const status = async () => {
      const seen = (await (await fetch(`${service.adminUrl}/admin/replays/${replayId}`, { headers: adminHeaders(adminToken) })).json()) as { state: string; delivered: number };
      return `${seen.state} ${seen.delivered}`;
    };
    await expect.poll(status).toBe(`done ${count}`);
    const seen = await refreshes();
    await expect.poll(refreshes).toBeGreaterThanOrEqual(seen + 2);
    return (await page.locator(`#replays tbody tr[data-replay="${replayId}"] td`).allTextContents()).slice(0, 6);
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    cleanup.push(() => db.drop());
    emulator = await startEmulator({ timeScale: 0.01 });
    cleanup.push(() => emulator.close());
    crm = await startSinkServer(() => ({ status: 204 }));
    cleanup.push(() => crm.close());
    billing = await startSinkServer((request) => (!billingFixed && request.headers["webhook-id"] === refused.id ? { status: 400, body: "unknown customer" } : { status: 204 }));
    cleanup.push(() => billing.close());

    const dir = await mkdtemp(join(tmpdir(), "sk-operator-view-archive-"));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    const routesFile = join(dir, "routes.yaml");
    await writeFile(routesFile, [`- { name: crm, match: "user.*", url: "${crm.url}" }`, `- { name: billing, match: "user.*", url: "${billing.url}" }`].join("\n"));
    const door = await startFrontDoor();
    cleanup.push(() => door.close());
    service = await startTestService({
      ...tenantEnv(emulator),
      PUBLIC_URL: door.url,
      ROUTES_FILE: routesFile,
      ADMIN_TOKEN: adminToken,
      ARCHIVE: "on",
      ARCHIVE_DATABASE_URL: db.url,
    }, "all", log.logger);
    cleanup.push(() => service.close());
    door.open(service.publicUrl!);

    page = await openBrowser(cleanup, consoleErrors);
  });

  it("when an operator searches by user id, then that user's events are listed and the timeline shows each route's outcome", async () => {
    for (const event of [...aliceEvents, bobEvent]) expect((await service.post("/webhooks", JSON.stringify(event))).status).toBe(202);
    await crm.untilReceived(4, 60_000);
    await billing.until((requests) => requests.length >= 4, 60_000);
    // Archived with each route's outcome before the page searches.
    await expect.poll(async () => (await db.query<{ n: string }>("SELECT count(DISTINCT (event_id, route)) AS n FROM every_attempt WHERE outcome IN ('delivered', 'dead_letter')"))[0]!.n).toBe("8");
    await page.goto(`${service.adminUrl}/admin/?refresh=${refreshSeconds}`);
    await expect.poll(refreshes).toBeGreaterThanOrEqual(1);
    await page.locator("#search").getByLabel("User, organization or group id").fill(alice);
    await page.locator("#search").getByRole("button", { name: "Search" }).click();
    await page.locator("#search-results table").waitFor();
    expect(await text("#search-results caption")).toBe("3 events");
    const listed = await page.locator("#search-results tbody th button").allTextContents();
    expect(listed.sort()).toEqual(aliceEvents.map((event) => event.id).sort());
    expect(await text("#search-results")).not.toContain(bobEvent.id);
    const refusedRow = page.locator("#search-results tbody tr", { has: page.getByRole("button", { name: refused.id }) });
    expect(await refusedRow.locator("td").nth(1).textContent()).toBe("user.created");
    expect(await refusedRow.locator("td").nth(4).textContent()).toMatch(/crm: delivered/);
    expect(await refusedRow.locator("td").nth(4).textContent()).toMatch(/billing: dead_letter/);

    await page.getByRole("button", { name: refused.id }).click();
    await page.locator("#timeline ol").first().waitFor();
    expect(await text("#timeline h3")).toBe(`Timeline of ${refused.id} (user.created)`);
    expect(await page.locator("#timeline > div > ol > li").first().textContent()).toMatch(/^Arrived .* by webhook\.$/);
    expect(await page.locator("#timeline [data-timeline-route]").count()).toBe(2);
    const crmLine = page.locator('#timeline [data-timeline-route="crm"]');
    expect(await crmLine.textContent()).toMatch(/^Route crm: delivered/);
    expect(await crmLine.locator("li").allTextContents()).toEqual([expect.stringMatching(/: 204, delivered$/)]);
    const billingLine = page.locator('#timeline [data-timeline-route="billing"]');
    expect(await billingLine.textContent()).toMatch(/^Route billing: dead_letter/);
    expect(await billingLine.locator("li").allTextContents()).toEqual([expect.stringMatching(/: 400, dead_letter$/)]);
    expect(consoleErrors).toEqual([]);
  });

  it("when a replay is started from the page, then the sink receives the events and its progress reaches done", async () => {
    const before = crm.requests.length;
    const form = page.locator("#replay");
    await form.getByRole("combobox", { name: /^Route/ }).selectOption("crm");
    await form.locator("input[name=since]").fill(new Date(Date.now() - 3_600_000).toISOString());
    await form.getByLabel("User, organization or group id").fill(alice);
    await form.getByRole("button", { name: "Count events (dry run)" }).click();
    await expect.poll(() => text("#replay-message")).toBe("Dry run: 3 events match; nothing was sent.");
    expect(crm.requests.length).toBe(before);

    await page.getByRole("button", { name: "Start replay of 3 events to crm" }).click();
    await expect.poll(() => text("#replay-message")).toMatch(/^Replay \S+ started: 3 events to crm\./);
    const replayed = await crm.until((requests) => requests.length >= before + 3, 60_000);
    const sent = replayed.slice(before);
    expect(sent.map((request) => request.headers["x-streamkeeper-origin"])).toEqual(["replay", "replay", "replay"]);
    expect(webhookIds(sent).sort()).toEqual(aliceEvents.map((event) => event.id).sort());

    const replayId = (await page.locator("#replays tbody tr[data-replay]").getAttribute("data-replay"))!;
    // route, state, matched, sent, delivered, failed
    expect(await replayRowOnceDelivered(replayId, 3)).toEqual(["crm", "done", "3", "3", "3", "0"]);
    expect(crm.requests.length).toBe(before + 3);
    expect(consoleErrors).toEqual([]);
  });

  it("when a dead letter is retried from the page, then it is delivered", async () => {
    expect((await overview()).routes.find((route) => route.name === "billing")?.deadLetters).toBe(1);
    await expect.poll(() => text('#routes tr[data-route="billing"] td:nth-of-type(6)')).toBe("1");
    billingFixed = true;
    const before = billing.requests.length;

    await page.getByRole("button", { name: "List dead letters" }).click();
    await page.locator("#dead-letters table").waitFor();
    expect(await text("#dead-letters caption")).toBe("1 dead letters");
    await page.getByRole("checkbox", { name: `Select ${refused.id} of route billing` }).check();
    await page.getByRole("button", { name: "Retry selected" }).click();
    await expect.poll(() => text("#dead-letters p")).toBe("1 dead letters queued again, with fresh attempts.");

    const retried = await billing.until((requests) => requests.slice(before).some((request) => request.status === 204), 60_000);
    expect(webhookIds(retried.slice(before))).toEqual([refused.id]);
    expect(crm.requests.filter((request) => request.headers["webhook-id"] === refused.id)).toHaveLength(2); // the original and the replay: the retry went to billing only
    await withinOneRefresh((seen) => seen.routes.find((route) => route.name === "billing")?.deadLetters === 0);
    expect(await text('#routes tr[data-route="billing"] td:nth-of-type(6)')).toBe("0");
    expect(consoleErrors).toEqual([]);
  });

  it("when 'Replay this event' is clicked in a timeline, then only that event is sent again", async () => {
    const chosen = aliceEvents[1]!;
    const before = crm.requests.length;
    await page.locator("#search").getByRole("button", { name: "Search" }).click();
    await page.getByRole("button", { name: chosen.id }).click();
    await expect.poll(() => text("#timeline h3")).toBe(`Timeline of ${chosen.id} (user.updated)`);
    await page.locator("#timeline").getByRole("combobox", { name: /^Replay to route/ }).selectOption("crm");
    await page.locator("#timeline").getByRole("button", { name: "Replay this event" }).click();
    await expect.poll(() => text("#timeline-message")).toMatch(/^Replay \S+ started: 1 events to crm\./);
    const replayId = /^Replay (\S+) started/.exec(await text("#timeline-message"))![1]!;
    expect(await replayRowOnceDelivered(replayId, 1)).toEqual(["crm", "done", "1", "1", "1", "0"]);
    const sent = crm.requests.slice(before);
    expect(webhookIds(sent)).toEqual([chosen.id]);
    expect(sent[0]!.headers["x-streamkeeper-origin"]).toBe("replay");
    expect(consoleErrors).toEqual([]);
  });

  it("when an operator writes from the page, then each write is in the service log as 'admin write asked' with its body", () => {
    const asked = log.lines.filter((line) => line.msg === "admin write asked").map((line) => ({ method: line.method, path: line.path, asked: line.asked }));
    expect(asked).toEqual([
      { method: "POST", path: "/admin/replays", asked: expect.objectContaining({ route: "crm", entity: alice, dryRun: true }) },
      { method: "POST", path: "/admin/replays", asked: expect.not.objectContaining({ dryRun: true }) },
      { method: "POST", path: "/admin/dead-letters/replay", asked: { jobIds: [expect.stringMatching(/^billing\//)] } },
      { method: "POST", path: "/admin/replays", asked: expect.objectContaining({ route: "crm", entity: alice, type: "user.updated" }) },
    ]);
  });
});

describe.skipIf(!existsSync(chromiumPath))("operate: the operator view with the archive off", () => {
  const cleanup = useCleanup("all", { quiet: true });

  it("when the service runs with ARCHIVE=off, then search says the archive is not available and the rest of the page works", async () => {
    const sink = await startSinkServer(() => ({ status: 204 }));
    cleanup.push(() => sink.close());
    const service = await startTestService({ DOWNSTREAM_URL: sink.url, ADMIN_TOKEN: adminToken, ARCHIVE: "off" });
    cleanup.push(() => service.close());
    const consoleErrors: string[] = [];
    const page = await openBrowser(cleanup, consoleErrors);
    const refreshes = async () => Number(await page.locator("body").getAttribute("data-refreshes"));
    const text = async (selector: string) => (await page.locator(selector).textContent()) ?? "";

    await page.goto(`${service.adminUrl}/admin/?refresh=${refreshSeconds}`);
    await expect.poll(refreshes).toBeGreaterThanOrEqual(1);
    await page.locator("#search").getByLabel("User, organization or group id").fill(alice);
    await page.locator("#search").getByRole("button", { name: "Search" }).click();
    await page.locator("#search-results p").waitFor();
    expect(await text("#search-results")).toMatch(/^Search is not available in this version \(or the archive is off or unreachable\)/);
    await page.locator("#replay input[name=since]").fill(new Date(Date.now() - 3_600_000).toISOString());
    await page.getByRole("button", { name: "Count events (dry run)" }).click();
    await expect.poll(() => text("#replay-message")).toMatch(/^Replay is not available in this version/);
    expect(await page.getByRole("button", { name: /^Start replay/ }).isDisabled()).toBe(true);

    // The rest works: an event is delivered and counted, the page keeps refreshing, dead letters list.
    expect((await service.post("/webhooks", JSON.stringify(eventOf(bob, "user.updated")))).status).toBe(202);
    await sink.untilReceived(1, 60_000);
    expect(await page.locator("#routes tbody tr[data-route]").count()).toBeGreaterThanOrEqual(1);
    const seen = await refreshes();
    await expect.poll(refreshes).toBeGreaterThanOrEqual(seen + 2);
    expect(await text("#problem")).toBe("");
    await page.getByRole("button", { name: "List dead letters" }).click();
    await expect.poll(() => text("#dead-letters")).toBe("No dead letters.");
    // Only the archive's missing endpoints failed (the browser reports them as failed loads).
    expect(consoleErrors.filter((line) => !/^Failed to load resource: .*404.*\/admin\/(events|replays)\b|^404 .*\/admin\/(events|replays)\b/.test(line))).toEqual([]);
    expect(consoleErrors.length).toBeGreaterThanOrEqual(2);
  });
});

describe.skipIf(!existsSync(chromiumPath))("operate: the operator view shows a recovered event's story", () => {
  const cleanup = useCleanup("all", { quiet: true });

  it("when an event the tenant had failed is recovered, then its timeline says the tenant failed it first", async () => {
    const db = await createTestDatabase();
    cleanup.push(() => db.drop());
    const emulator = await startEmulator({ timeScale: 0.01 });
    cleanup.push(() => emulator.close());
    const sink = await startSinkServer(() => ({ status: 204 }));
    cleanup.push(() => sink.close());
    // The stream points at the service's address before the service listens: the tenant fails the delivery.
    const door = await startFrontDoor();
    cleanup.push(() => door.close());
    const publicUrl = door.url;
    await createStream(emulator, `${publicUrl}/webhooks`, { auth: { method: "basic", username: testCredentials.username, password: testCredentials.password }, types: ["user.created"] });
    const eventId = await emit(emulator, "user.created", { object: { user_id: alice } });
    expect((await settled(emulator, eventId, 60_000)).status).toBe("failed");

    const service = await startTestService({
      ...tenantEnv(emulator),
      PUBLIC_URL: publicUrl,
      DOWNSTREAM_URL: sink.url,
      ADMIN_TOKEN: adminToken,
      ARCHIVE: "on",
      ARCHIVE_DATABASE_URL: db.url,
      RECONCILE_SWEEP_INTERVAL_SECONDS: "1",
    });
    cleanup.push(() => service.close());
    door.open(service.publicUrl!);
    await sink.until((requests) => webhookIds(requests).includes(eventId), 90_000);
    await expect.poll(async () => (await db.query<{ origin: string }>("SELECT origin FROM events WHERE id = $1", [eventId]))[0]?.origin).toBe("reconcile");
    await expect.poll(async () => (await db.query("SELECT 1 FROM every_attempt WHERE event_id = $1 AND outcome = 'delivered'", [eventId])).length).toBe(1);

    const consoleErrors: string[] = [];
    const page = await openBrowser(cleanup, consoleErrors);
    await page.goto(`${service.adminUrl}/admin/?refresh=${refreshSeconds}`);
    await page.locator("#search").getByLabel("Event id").fill(eventId);
    await page.locator("#search").getByRole("button", { name: "Search" }).click();
    await page.getByRole("button", { name: eventId }).click();
    await page.locator("#timeline ol").first().waitFor();
    expect(await page.locator("#timeline > div > ol > li").first().textContent()).toMatch(/^Arrived .* by reconcile, after the tenant had failed to deliver it\.$/);
    expect(await page.locator('#timeline [data-timeline-route="default"]').textContent()).toMatch(/^Route default: delivered/);
    expect(consoleErrors).toEqual([]);
  });
});
