import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import type { Page } from "playwright-core";
import { beforeAll, describe, expect, inject, it } from "vitest";
import type { DeliveryJobData } from "../../src/queue/delivery-job.js";
import { bucketOf } from "../../src/freshness/lag-buckets.js";
import { freshnessHourKey, freshnessMinuteKey, hourKeyTtlMs } from "../../src/freshness/freshness-keys.js";
import { deliveryQueueBullPrefix, deliveryQueueName } from "../../src/queue/queue-names.js";
import { createTestDatabase, type TestDatabase } from "../helpers/archive-database.js";
import { useCleanup } from "../helpers/cleanup.js";
import { chromiumPath, openChromium } from "../helpers/open-chromium.js";
import { operatorViewProbe } from "../helpers/operator-view-page.js";
import { adminHeaders } from "../helpers/credentials.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer } from "../helpers/sink-server.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";

const adminToken = "whole-service-admin-token";
const refreshSeconds = 2;
/** OPERATOR_VIEW_SCREENSHOTS=1 writes the page's picture for the README and docs/operating.md. */
const docsImages = process.env.OPERATOR_VIEW_SCREENSHOTS === "1" ? "docs/images" : undefined;

if (!existsSync(chromiumPath)) console.warn(`operator view browser test skipped: ${chromiumPath} is missing (Debian: apt-get install -y chromium; CI installs it)`);

/**
 * The operator view as a bookmark opens it, `http://ops:<token>@host:port/admin/` (the
 * browser holds no other login), in a real headless Chromium, against the whole service with
 * the archive on: route `crm` (204, objective 30 s), route `billing` (503, so its circuit
 * opens), and a route `legacy` removed from the configuration with 2 events still waiting.
 * The tests run in order on one page.
 */
describe.skipIf(!existsSync(chromiumPath))("operate: the operator view shows the whole service, opened from a URL with credentials", () => {
  const cleanup = useCleanup("all", { quiet: true });
  let db: TestDatabase;
  let service: TestService;
  let page: Page;
  const consoleErrors: string[] = [];
  let events: ReturnType<typeof userEvent>[];
  let redis: Redis;
  let queuePrefix: string;
  let crmTop: number;

  /**
   * The hour before the service starts, as the delivery path and the waiting sampler write it (one
   * hash per minute, freshness-keys.ts): crm steady at 20 to 40 a minute within 2 s;
   * billing as steady until its downstream failed 15 minutes ago, then nothing delivered
   * and its events piling up. Returns the highest delivered per minute of crm.
   */
  async function seedLastHour(now: number): Promise<number> {
    const current = Math.floor(now / 60_000);
    const pipeline = redis.pipeline();
    let crmTop = 0;
    for (let back = 59; back >= 1; back--) {
      const key = freshnessMinuteKey(queuePrefix, current - back);
      const crm = 30 + Math.round(10 * Math.sin(back / 6));
      crmTop = Math.max(crmTop, crm);
      const billingDown = back <= 15;
      // The minute's hash, and its hour's (the day's freshness in the routes table).
      for (const hashKey of [key, freshnessHourKey(queuePrefix, Math.floor((current - back) / 60))]) {
        pipeline.hincrby(hashKey, "crm|d", crm).hincrby(hashKey, `crm|b${bucketOf(300)}`, crm - 2).hincrby(hashKey, `crm|b${bucketOf(1200 + 40 * (back % 10))}`, 2);
        if (!billingDown) pipeline.hincrby(hashKey, "billing|d", crm).hincrby(hashKey, `billing|b${bucketOf(500)}`, crm);
        pipeline.pexpire(hashKey, hourKeyTtlMs);
      }
      pipeline.hset(key, "crm|w", Math.max(0, Math.round(4 * Math.sin(back / 4))));
      pipeline.hset(key, "billing|w", billingDown ? Math.ceil((16 - back) / 5) : 0);
    }
    await pipeline.exec();
    return crmTop;
  }

  const { refreshes, withinOneRefresh, text } = operatorViewProbe(() => ({ adminUrl: service.adminUrl, page }), adminToken);

  beforeAll(async () => {
    db = await createTestDatabase();
    cleanup.push(() => db.drop());
    const crm = await startSinkServer(() => ({ status: 204 }));
    cleanup.push(() => crm.close());
    const billing = await startSinkServer(() => ({ status: 503, body: "maintenance" }));
    cleanup.push(() => billing.close());
    const dir = await mkdtemp(join(tmpdir(), "sk-operator-view-whole-"));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    const routesFile = join(dir, "routes.yaml");
    await writeFile(routesFile, [`- { name: crm, match: "user.*", url: "${crm.url}", freshnessSeconds: 30 }`, `- { name: billing, match: "user.*", url: "${billing.url}", maxAttemptsPerEvent: 50 }`].join("\n"));

    // Two events wait for a route the configuration no longer has.
    queuePrefix = `test-${randomUUID()}`;
    redis = new Redis(inject("redisUrl"), { maxRetriesPerRequest: null });
    cleanup.push(() => redis.quit());
    const legacy = new Queue<DeliveryJobData>(deliveryQueueName("legacy"), { connection: redis, prefix: deliveryQueueBullPrefix(queuePrefix, "legacy") });
    cleanup.push(() => legacy.close());
    for (const event of [userEvent(), userEvent()]) await legacy.add(event.type, { event, origin: "webhook", receivedAt: Date.now() });
    crmTop = await seedLastHour(Date.now());

    service = await startTestService({ QUEUE_PREFIX: queuePrefix, ROUTES_FILE: routesFile, ADMIN_TOKEN: adminToken, ARCHIVE: "on", ARCHIVE_DATABASE_URL: db.url, DISPATCH_CIRCUIT_FAILURES: "2" });
    cleanup.push(() => service.close());

    // No login given to the browser: the one in the URL, as a bookmark gives it.
    page = await openChromium(cleanup, consoleErrors);
    await mkdir("test-artifacts", { recursive: true });
  });

  it("when the view is opened as http://ops:<token>@host:port/admin/, then it is styled, its tables fill, and nothing fails", async () => {
    const url = new URL(`${service.adminUrl}/admin/?refresh=${refreshSeconds}`);
    url.username = "ops";
    url.password = adminToken;
    await page.goto(url.href);
    await expect.poll(refreshes).toBeGreaterThanOrEqual(1);
    // The stylesheet applied (a heading's rule), the overview read (the routes' rows), no problem said.
    expect(await page.locator("h2").first().evaluate((heading) => heading.ownerDocument.defaultView!.getComputedStyle(heading).borderBottomStyle)).toBe("solid");
    expect(await page.locator("#routes tbody tr[data-route]").evaluateAll((rows) => rows.map((row) => row.getAttribute("data-route")))).toEqual(["crm", "billing"]);
    expect(await page.locator("#problem").isHidden()).toBe(true);
    expect(await text("#service")).toContain("Archive");
    expect(consoleErrors).toEqual([]);
  });

  it("when events were delivered in the last hours, then a search with since 2h lists them, and the time fields show the forms the CLI takes", async () => {
    // Made now: their time is when they happened, so crm meets its objective.
    events = [userEvent(), userEvent(), userEvent()];
    for (const event of events) expect((await service.post("/webhooks", JSON.stringify(event))).status).toBe(202);
    // Archived (the writer runs beside the delivery): the service's own search finds them.
    await expect.poll(async () => ((await (await fetch(`${service.adminUrl}/admin/events?type=user.*`, { headers: adminHeaders(adminToken) })).json()) as { events: unknown[] }).events.length).toBe(3);
    const search = page.locator("#search");
    expect(await search.locator("input[name=since]").getAttribute("placeholder")).toBe("2h");
    expect(await text("#time-forms")).toContain("90m, 2h, 7d");
    await search.locator("input[name=since]").fill("2h");
    await search.getByRole("button", { name: "Search" }).click();
    await expect.poll(() => text("#search-results caption")).toBe("3 events");
    const listed = await page.locator("#search-results tbody th button").allTextContents();
    expect(listed.sort()).toEqual(events.map((event) => event.id).sort());
    expect(consoleErrors).toEqual([]);
  });

  it("when a replay is started elsewhere, a route's circuit opens and a removed route holds events, then the health line, the service table, every replay and the last hour's charts show it", async () => {
    // A replay started through the API, not from this page.
    const started = await fetch(`${service.adminUrl}/admin/replays`, { method: "POST", headers: { ...adminHeaders(adminToken), "content-type": "application/json" }, body: JSON.stringify({ route: "crm", since: "1h" }) });
    expect(started.status).toBe(202);
    const { replayId } = (await started.json()) as { replayId: string };
    await withinOneRefresh((seen) => {
      const crm = seen.routes.find((route) => route.name === "crm")!;
      return seen.routes.find((route) => route.name === "billing")?.circuit === "open" && crm.lastHour!.delivered.reduce((sum, n) => sum + n, 0) >= 3 && crm.lastHour!.waiting.all.some((waiting) => waiting !== null);
    });

    const health = await text("#health");
    expect(health).toMatch(/^Needs attention: /);
    expect(health).toContain("route billing: circuit open, not sending");
    expect(health).toContain("removed route legacy holds 2 events (streamkeeper routes move or drop)");
    expect(await page.locator("#health").getAttribute("class")).toContain("bad");

    const service$ = await page.locator("#service tbody tr").evaluateAll((rows) => rows.map((row) => [...row.children].map((cell) => cell.textContent)));
    expect(service$).toEqual([
      ["Pull from the tenant", "off (PULL=off): events arrive by push only"],
      ["Archive", expect.stringMatching(/^up, outbox (empty|[\d.]+ (ms|s) behind)$/)],
      ["Removed routes holding events", "legacy: 2 waiting"],
    ]);

    await expect.poll(() => page.locator(`#replays tbody tr[data-replay="${replayId}"] td`).first().textContent()).toBe("crm");

    // Three charts per route, each a picture of the hour with its latest figure said.
    const crmCharts = page.locator('#charts figure[data-route="crm"]');
    expect(await crmCharts.locator("svg[role=img]").count()).toBe(3);
    expect(await crmCharts.locator(".chart-title").allTextContents()).toEqual(["Delivered per minute", "Freshness p99 (live events)", "Waiting"]);
    expect(await crmCharts.locator("svg").first().getAttribute("aria-label")).toMatch(new RegExp(`^Delivered per minute, last hour: latest \\d+, highest ${crmTop}$`));
    expect(await crmCharts.locator("svg").nth(1).getAttribute("aria-label")).toMatch(/^Freshness p99 \(live events\), last hour: latest [\d.]+ (ms|s), highest [\d.]+ s$/);
    expect(await page.locator('#charts figure[data-route="billing"] svg').nth(2).getAttribute("aria-label")).toMatch(/^Waiting, last hour: latest \d, highest 3$/);
    expect(await crmCharts.locator("svg .delivered").count()).toBeGreaterThanOrEqual(1);
    expect(await page.locator('#charts figure[data-route="billing"] svg[role=img]').count()).toBe(3);

    await page.screenshot({ path: "test-artifacts/operator-view-whole-service.png", fullPage: true });
    // The picture: the page down to the replays (search and the forms are below).
    const bottom = await page.locator("#replays").evaluate((table) => table.getBoundingClientRect().bottom + table.ownerDocument.defaultView!.scrollY);
    if (docsImages) await page.screenshot({ path: join(docsImages, "operator-view.png"), fullPage: true, clip: { x: 0, y: 0, width: 1400, height: Math.ceil(bottom) + 16 } });
    expect(consoleErrors).toEqual([]);
  });
});
