import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../helpers/start-test-service.js";

const token = "guards-admin-token";
const login = `Basic ${Buffer.from(`operator:${token}`).toString("base64")}`;

/**
 * The admin API's writes as a browser and a client send them: a page of another site
 * cannot make a logged-in browser write (its Basic credentials ride on any request), and a
 * body the API cannot read is answered in our words, never the parser's.
 */
describe("admin API: cross-site writes and unreadable bodies", () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService({ ADMIN_TOKEN: token });
  });
  afterAll(async () => {
    await service?.close();
  });
  const post = (path: string, headers: Record<string, string>, body?: string) => fetch(`${service.adminUrl}${path}`, { method: "POST", headers: { authorization: login, ...headers }, body });

  it("when a page of another site posts a form to a write with the browser's login, then it is refused with 403 and nothing runs; the same write from the operator view's own address or from a client is served", async () => {
    const form = { "content-type": "application/x-www-form-urlencoded" };
    const elsewhere: Array<Record<string, string>> = [{ origin: "https://evil.example" }, { "sec-fetch-site": "cross-site" }, { "sec-fetch-site": "same-site", origin: "https://admin.evil.example" }, { origin: "null" }];
    for (const from of elsewhere) {
      const answer = await post("/admin/reconcile", { ...form, ...from }, "eventIds=evt_1");
      expect(answer.status, JSON.stringify(from)).toBe(403);
      expect(((await answer.json()) as { detail: string }).detail).toMatch(/from a page of another site .* is refused: send it with the streamkeeper CLI/);
    }
    const json = { "content-type": "application/json" };
    const own = new URL(service.adminUrl).origin;
    const here: Array<Record<string, string>> = [{ origin: own, "sec-fetch-site": "same-origin" }, {}];
    for (const from of here) {
      const answer = await post("/admin/reconcile", { ...json, ...from }, JSON.stringify({ eventIds: [] }));
      expect(answer.status, JSON.stringify(from)).not.toBe(403);
    }
    // Reads stay open to a link followed from elsewhere (the login still applies).
    expect((await fetch(`${service.adminUrl}/admin/config`, { headers: { authorization: login, "sec-fetch-site": "cross-site" } })).status).toBe(200);
  });

  it("when a body is not JSON or is over the limit, then the answer says what to send in our words (400, 413), not the parser's", async () => {
    const json = { "content-type": "application/json" };
    const broken = await post("/admin/reconcile", json, '{"eventIds": [');
    expect(broken.status).toBe(400);
    expect(((await broken.json()) as { detail: string }).detail).toBe("the request body is not valid JSON: send a JSON object with Content-Type: application/json");
    const huge = await post("/admin/reconcile", json, JSON.stringify({ eventIds: ["x".repeat(3 * 1024 * 1024)] }));
    expect(huge.status).toBe(413);
    expect(((await huge.json()) as { detail: string }).detail).toMatch(/^the request body is over the admin API's 2 MB limit: send fewer items per request/);
  });

  it("when a path does not percent-decode, then the answer says so, not that the body could not be read", async () => {
    const answer = await fetch(`${service.adminUrl}/admin/events/evt_%E0%A4%A`, { headers: { authorization: login } });
    expect(answer.status).toBe(400);
    expect(((await answer.json()) as { detail: string }).detail).toBe("the path is not valid percent-encoding: encode each id in it as UTF-8 (encodeURIComponent), a % itself as %25");
  });

  it("when a write's body is a JSON list rather than an object, then the answer names the body and says to send an object, on every write that takes one", async () => {
    const json = { "content-type": "application/json" };
    // POST /admin/replays and /admin/routes/:name/park, with the archive on: archive-search.test.ts.
    const writes = ["/admin/reconcile", "/admin/sweep/window", "/admin/streams/est_38ANnv8pQhqsZrX2VFbftv/connect"];
    for (const path of writes) {
      const answer = await post(path, json, JSON.stringify([{ route: "default" }]));
      expect(answer.status, path).toBe(400);
      expect(((await answer.json()) as { detail: string }).detail, path).toMatch(/^body:? must be a JSON object, not a list/);
    }
  });
});
