import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import type { Overview } from "../../src/admin/describe-overview.js";
import { startEmulator, type Emulator } from "../../src/emulator/start-emulator.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer } from "../helpers/sink-server.js";
import { startTestService, testCredentials, type TestService } from "../helpers/start-test-service.js";
import { call, createStream, getToken, tenantEnv } from "../integration/emulator-test-kit.js";
import { useCleanup } from "../helpers/cleanup.js";
import { startFrontDoor } from "../helpers/start-front-door.js";
import { adminHeaders } from "../helpers/credentials.js";

const chromiumPath = "/usr/bin/chromium";
const adminToken = "operator-view-admin-token";
/** The page polls every `refresh` seconds (5 by default); 2 keeps the test short. */
const refreshSeconds = 2;
/** OPERATOR_VIEW_SCREENSHOTS=1 writes the page's pictures for docs/operating.md. */
const docsImages = process.env.OPERATOR_VIEW_SCREENSHOTS === "1" ? "docs/images" : undefined;

if (!existsSync(chromiumPath)) {
  console.warn(`operator view browser test skipped: ${chromiumPath} is missing (Debian: apt-get install -y chromium; CI installs it)`);
}

/**
 * The operator view in a real headless Chromium against the whole service (role all), the
 * tenant emulator and real downstreams: routes `crm` (fast, objective 5 s), `billing`
 * (answers 503, so its circuit opens) and `warehouse` (3 s per request, objective 1 s);
 * streams `est_…` enabled and one the tenant has disabled.
 */
describe.skipIf(!existsSync(chromiumPath))("operate: the operator view in a real browser", () => {
  const cleanup = useCleanup("all", { quiet: true });

  let service: TestService;
  let emulator: Emulator;
  let page: Page;
  let disabledStream: string;
  const consoleErrors: string[] = [];

  async function overview(): Promise<Overview> {
    return (await (await fetch(`${service.adminUrl}/admin/overview`, { headers: adminHeaders(adminToken) })).json()) as Overview;
  }

  const refreshes = async () => Number(await page.locator("body").getAttribute("data-refreshes"));

  /**
   * Once the service's overview shows `holds`, the page shows it after at most one refresh
   * that started after it: the refresh in flight may have read the state before, the one
   * after it cannot have.
   */
  async function withinOneRefresh(holds: (seen: Overview) => boolean) {
    await expect.poll(async () => holds(await overview())).toBe(true);
    const seen = await refreshes();
    await expect.poll(refreshes).toBeGreaterThanOrEqual(seen + 2);
  }

  beforeAll(async () => {
    emulator = await startEmulator({ timeScale: 0.01 });
    cleanup.push(() => emulator.close());
    const fast = await startSinkServer();
    cleanup.push(() => fast.close());
    const failing = await startSinkServer(() => ({ status: 503, body: "maintenance" }));
    cleanup.push(() => failing.close());
    const slow = await startSinkServer(() => ({ status: 204, delayMs: 3000 }));
    cleanup.push(() => slow.close());

    const door = await startFrontDoor();
    cleanup.push(() => door.close());
    const publicUrl = door.url;
    const auth = { method: "basic", username: testCredentials.username, password: testCredentials.password } as const;
    await createStream(emulator, `${publicUrl}/webhooks`, { auth, name: "live", types: ["user.updated"] });
    disabledStream = await createStream(emulator, `${publicUrl}/webhooks`, { auth, name: "disabled by the tenant", types: ["user.updated"] });
    const patched = await call(emulator, "PATCH", `/api/v2/event-streams/${disabledStream}`, { token: await getToken(emulator), body: { status: "disabled" } });
    expect(patched.status).toBe(200);

    const dir = await mkdtemp(join(tmpdir(), "sk-operator-view-"));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    const routesFile = join(dir, "routes.yaml");
    await writeFile(
      routesFile,
      [
        `- { name: crm, match: "user.*", url: "${fast.url}", freshnessSeconds: 5 }`,
        `- { name: billing, match: "user.*", url: "${failing.url}", maxAttemptsPerEvent: 50, ratePerSecond: 20 }`,
        `- { name: warehouse, match: "user.*", url: "${slow.url}", freshnessSeconds: 1 }`,
      ].join("\n"),
    );
    service = await startTestService({
      ...tenantEnv(emulator),
      ROUTES_FILE: routesFile,
      ADMIN_TOKEN: adminToken,
      PUBLIC_URL: publicUrl,
      STREAM_WATCH_INTERVAL_SECONDS: "1",
      RECONCILE_SWEEP_INTERVAL_SECONDS: "1",
      DISPATCH_CIRCUIT_FAILURES: "2",
    });
    cleanup.push(() => service.close());
    door.open(service.publicUrl!);

    const userDataDir = await mkdtemp(join(tmpdir(), "sk-chromium-"));
    cleanup.push(() => rm(userDataDir, { recursive: true, force: true }));
    const context: BrowserContext = await chromium.launchPersistentContext(userDataDir, {
      executablePath: chromiumPath,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
      httpCredentials: { username: "operator", password: adminToken },
      viewport: { width: 1400, height: 1000 },
    });
    cleanup.push(() => context.close());
    page = await context.newPage();
    page.on("console", (message) => {
      // Ours only: the queue dashboard, visited through the link, loads web fonts from the
      // internet, which fail offline (the operator view loads nothing from elsewhere: its CSP forbids it).
      const where = message.location().url;
      const dashboard = /\/admin\/queues/.test(`${page.url()} ${where}`) || /fonts\.g(oogleapis|static)\.com/.test(where);
      if (message.type() === "error" && !dashboard) consoleErrors.push(`${message.text()} (${where})`);
    });
    page.on("pageerror", (error) => consoleErrors.push(error.message));
    page.on("response", (response) => {
      if (response.status() >= 400) consoleErrors.push(`${response.status()} ${response.url()}`);
    });
    // A cold Chromium on a loaded 2-core machine can take a while.
    page.setDefaultTimeout(30_000);
    await mkdir("test-artifacts", { recursive: true });
    if (docsImages) await mkdir(docsImages, { recursive: true });
  });

  it("when an operator opens /admin/, then the page loads its streams and routes with no console error, and links the queue dashboard", async () => {
    await page.goto(`${service.adminUrl}/admin/?refresh=${refreshSeconds}`);
    await expect.poll(refreshes).toBeGreaterThanOrEqual(1);
    await expect(page.getByRole("heading", { level: 1, name: "Streamkeeper operator view" }).count()).resolves.toBe(1);
    for (const name of ["Streams", "Routes", "Dead letters", "Recovery and replays", "Search events", "Replay a window to a route"]) {
      expect(await page.getByRole("heading", { level: 2, name }).count()).toBe(1);
    }
    for (const route of ["crm", "billing", "warehouse"]) expect(await page.locator(`#routes tr[data-route="${route}"]`).count()).toBe(1);
    expect(await page.locator('#routes tr[data-route="billing"] td').nth(4).textContent()).toBe("20/s");
    expect(await page.getByRole("link", { name: "Queue dashboard" }).getAttribute("href")).toBe("queues");
    // Every form field has a label a screen reader announces.
    expect(await page.getByLabel("User, organization or group id").count()).toBe(2);
    expect(await page.getByRole("combobox", { name: /^Route/ }).count()).toBe(1);
    await page.getByRole("link", { name: "Queue dashboard" }).click();
    await page.waitForURL(/\/admin\/queues/);
    await page.goBack();
    await expect.poll(refreshes).toBeGreaterThanOrEqual(1);
    expect(consoleErrors).toEqual([]);
  });

  it("when the tenant has a stream disabled and a route's circuit opens, then the page shows both within one refresh", async () => {
    // Two events: billing fails both (503), which opens its circuit (DISPATCH_CIRCUIT_FAILURES=2).
    for (let i = 0; i < 2; i++) expect((await service.post("/webhooks", JSON.stringify(userEvent()))).status).toBe(202);
    await withinOneRefresh((seen) => seen.routes.find((route) => route.name === "billing")?.circuit === "open" && seen.streams.some((stream) => stream.streamId === disabledStream && stream.status === "disabled"));

    const stream = page.locator(`#streams tr[data-stream="${disabledStream}"]`);
    expect(await stream.locator("td.status").textContent()).toMatch(/^disabled: the tenant sends and keeps nothing/);
    expect(await stream.locator("td.status").getAttribute("class")).toContain("bad");
    const billing = page.locator('#routes tr[data-route="billing"]');
    expect(await billing.locator("td.circuit").textContent()).toMatch(/^open/);
    expect(await page.locator('#routes tr[data-route="crm"] td.circuit').textContent()).toBe("closed");
    expect(await page.locator("#sweep-summary").textContent()).toMatch(/^Sweep on/);
    expect(consoleErrors).toEqual([]);
  });

  it("when a route's downstream slows to 3 s per request, then its freshness shows below its 1 s objective within one refresh, and a fast route's as met", async () => {
    for (let i = 0; i < 3; i++) expect((await service.post("/webhooks", JSON.stringify(userEvent()))).status).toBe(202);
    await withinOneRefresh((seen) => {
      const warehouse = seen.routes.find((route) => route.name === "warehouse");
      const crm = seen.routes.find((route) => route.name === "crm");
      return warehouse?.freshness.last5m?.verdict === "missed" && crm?.freshness.last5m?.verdict === "met";
    });
    const warehouse = page.locator('#routes tr[data-route="warehouse"]');
    expect(await warehouse.locator("td.objective").textContent()).toMatch(/^1 s: missed \(\d+ of \d+ late\)$/);
    expect(await warehouse.locator("td.objective").getAttribute("class")).toContain("bad");
    // p99 at least the downstream's 3 s (the sketch's buckets are within 10%).
    const p99 = /\/ ([\d.]+) s/.exec((await warehouse.locator("td.freshness-5m").textContent()) ?? "");
    expect(Number(p99?.[1])).toBeGreaterThanOrEqual(2.7);
    expect(await page.locator('#routes tr[data-route="crm"] td.objective').textContent()).toBe("5 s: met");

    await page.screenshot({ path: "test-artifacts/operator-view.png", fullPage: true });
    expect(consoleErrors).toEqual([]);
  });

  it("when this version has no archive, then search and replay say so plainly instead of failing", async () => {
    const before = await overview();
    expect(before.routes.length).toBe(3);
    await page.getByLabel("User, organization or group id").first().fill("auth0|679fb1b1e809445f129bc18d");
    await page.getByRole("button", { name: "Search" }).click();
    // Either the archive answers (after the merge) or the page says it is not there; never a crash.
    await page.locator("#search-results p, #search-results table").first().waitFor();
    const said = (await page.locator("#search-results").textContent()) ?? "";
    expect(said).toMatch(/not available in this version|events|No event matches/);
    await page.locator("#replay input[name=since]").fill(new Date(Date.now() - 3_600_000).toISOString());
    await page.getByRole("button", { name: "Count events (dry run)" }).click();
    await expect.poll(async () => (await page.locator("#replay-message").textContent()) ?? "").toMatch(/not available in this version|Dry run: \d+ events match/);
    if (docsImages) await page.screenshot({ path: join(docsImages, "operator-view-search.png"), fullPage: false, clip: { x: 0, y: 0, width: 1400, height: 1000 } });
    // The browser itself reports the missing endpoints' 404s as failed loads; nothing else may fail.
    expect(consoleErrors.filter((text) => !/Failed to load resource|^404 .*\/admin\/(events\?|replays$)/.test(text))).toEqual([]);
  });
});
