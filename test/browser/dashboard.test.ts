import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext } from "playwright-core";
import { describe, expect, it } from "vitest";
import { findTool, pathOf } from "../helpers/find-tool.js";
import { userEvent } from "../helpers/fixtures.js";
import { startSinkServer } from "../helpers/sink-server.js";
import { startTestService } from "../helpers/start-test-service.js";
import { useCleanup } from "../helpers/cleanup.js";

const chromiumTool = findTool("chromium", "Debian: apt-get install -y chromium");
const adminToken = "dashboard-admin-token";
const screenshot = "test-artifacts/dashboard.png";

describe.skipIf(chromiumTool.skip)("operate: the queue dashboard in a real browser", () => {
  const cleanup = useCleanup("all");

  it("when an operator logs in to /admin/queues and retries a dead letter, then the downstream receives the event", async () => {
    // The downstream refuses the event for good (400: no retry), then is fixed.
    const sink = await startSinkServer(() => ({ status: 400, body: "unknown tenant" }));
    cleanup.push(() => sink.close());
    // The whole service (role all): receiver, dispatcher, reconciler, admin surface.
    const service = await startTestService({ DOWNSTREAM_URL: sink.url, ADMIN_TOKEN: adminToken });
    cleanup.push(() => service.close());

    const event = userEvent();
    expect((await service.post("/webhooks", JSON.stringify(event))).status).toBe(202);
    await sink.until((requests) => requests.some((request) => request.status === 400));

    // Without the token the dashboard asks the browser for a login.
    const anonymous = await fetch(`${service.adminUrl}/admin/queues`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("www-authenticate")).toMatch(/^Basic /);

    const userDataDir = await mkdtemp(join(tmpdir(), "sk-chromium-"));
    cleanup.push(() => rm(userDataDir, { recursive: true, force: true }));
    const context: BrowserContext = await chromium.launchPersistentContext(userDataDir, {
      executablePath: pathOf(chromiumTool),
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
      httpCredentials: { username: "operator", password: adminToken },
      viewport: { width: 1400, height: 900 },
    });
    cleanup.push(() => context.close());
    const page = await context.newPage();
    // Every request of the page (HTML, scripts, styles, API polls) goes through the
    // admin login; none may be refused. (Web fonts from the internet may fail offline.)
    const refused: string[] = [];
    page.on("response", (response) => {
      if (response.url().startsWith(service.adminUrl) && response.status() >= 400) refused.push(`${response.status()} ${response.url()}`);
    });

    await mkdir("test-artifacts", { recursive: true });
    // A cold Chromium rendering the dashboard on a loaded 2-core machine can take a while.
    page.setDefaultTimeout(30_000);
    await page.goto(`${service.adminUrl}/admin/queues`);
    // The job's card: the innermost box holding its id, its error and its retry button.
    const card = page
      .locator("div")
      .filter({ has: page.getByText(event.id, { exact: true }) })
      .filter({ hasText: "downstream answered 400" })
      .filter({ has: page.locator("svg.lucide-refresh-cw") })
      .last();
    try {
      await page.getByRole("link", { name: "reconcile" }).first().waitFor();
      await page.getByRole("link", { name: "deliver-default" }).first().click();
      await page.getByRole("link", { name: /^failed/i }).click();
      await card.waitFor();
    } finally {
      await page.screenshot({ path: screenshot, fullPage: true });
    }

    sink.answer = () => ({ status: 204 });
    await card.locator("button:has(svg.lucide-refresh-cw)").click();
    await page.getByRole("button", { name: "Confirm" }).click(); // "Are you sure that you want to retry this job?"
    const delivered = await sink.until((requests) => requests.some((request) => request.status === 204));
    const retried = delivered.find((request) => request.status === 204)!;
    expect(retried.headers["webhook-id"]).toBe(event.id);
    expect(JSON.parse(retried.body)).toMatchObject({ id: event.id, type: event.type });
    expect(refused).toEqual([]);

    // The dead letter is gone from the metrics too, once the job is marked completed.
    const deadline = Date.now() + 30_000;
    let metrics = "";
    while (Date.now() < deadline && !metrics.includes('streamkeeper_queue_jobs{queue="deliver-default",state="completed"} 1')) {
      metrics = await (await fetch(`${service.adminUrl}/metrics`)).text();
      await new Promise((ok) => setTimeout(ok, 50)); // a poll, not a busy loop on a loaded machine
    }
    expect(metrics).toContain('streamkeeper_queue_jobs{queue="deliver-default",state="failed"} 0');
    expect(metrics).toContain('streamkeeper_queue_jobs{queue="deliver-default",state="completed"} 1');
  });
});
