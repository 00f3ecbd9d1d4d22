import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../helpers/start-test-service.js";

const login = `Basic ${Buffer.from("operator:assets-admin-token").toString("base64")}`;

/**
 * The queue dashboard opened on a URL with the credentials in it: the browser sends them
 * for the page, not for the page's own fetch of its translations. That fetch must still
 * succeed, or the page shows raw keys (MENU.QUEUES).
 */
describe("queue dashboard: its assets load as the browser asks for them", () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService({ ADMIN_TOKEN: "assets-admin-token" });
  });
  afterAll(async () => {
    await service?.close();
  });

  it("when the page asks for its translations without credentials, then they are served (MENU.QUEUES has its text), while the page and its API still need the login", async () => {
    const page = await fetch(`${service.adminUrl}/admin/queues`, { headers: { authorization: login } });
    expect(page.status).toBe(200);
    const html = await page.text();
    // Where the page loads from: its <base href> and its main script, as the browser resolves them.
    const base = new URL(/<base href="([^"]+)"/.exec(html)![1]!, service.adminUrl);
    const scripts = [...html.matchAll(/<script[^>]* src="([^"]+)"/g)].map((match) => new URL(match[1]!, base));
    expect(scripts.length).toBeGreaterThan(0);
    let loadPath: string | undefined;
    let version: string | undefined;
    for (const script of scripts) {
      // Scripts load with the page's credentials: a browser sends them for <script> tags.
      const source = await (await fetch(script, { headers: { authorization: login } })).text();
      const found = /loadPath:`\$\{\w+\}([^`]+)`,queryParams:\{v:"([^"]+)"\}/.exec(source);
      if (found) [, loadPath, version] = found;
    }
    expect(loadPath, "the page's translation path, read from its script").toBe("static/locales/{{lng}}/{{ns}}.json");
    const locale = new URL(`${loadPath!.replace("{{lng}}", "en-US").replace("{{ns}}", "messages")}?v=${version}`, base);

    // The page's own fetch: no Authorization header.
    const answer = await fetch(locale);
    expect(answer.status).toBe(200);
    expect(((await answer.json()) as { MENU: { QUEUES: string } }).MENU.QUEUES).toBe("QUEUES");

    // Only the UI's own files: the page, its API and a file that is not there answer as before.
    expect((await fetch(`${service.adminUrl}/admin/queues`)).status).toBe(401);
    expect((await fetch(`${service.adminUrl}/admin/queues/api/queues`)).status).toBe(401);
    expect((await fetch(`${service.adminUrl}/admin/queues/static/../api/queues`)).status).toBe(401);
    expect((await fetch(`${service.adminUrl}/admin/queues/static/nothing-here.json`)).status).toBe(404);
  });
});
