import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.js";
import { tenantId } from "../helpers/fixtures.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";
import { adminHeaders, basicAuthorization as basic } from "../helpers/credentials.js";

const adminToken = "adm1n-t0ken-for-security-tests";

/** Every admin endpoint of README.md#http-surfaces, with a request that would succeed given the token. */
const endpoints: Array<{ method: string; path: string; body?: string }> = [
  { method: "GET", path: `/admin/events/${tenantId("evt")}` },
  { method: "POST", path: "/admin/reconcile", body: JSON.stringify({ eventIds: [tenantId("evt")] }) },
  { method: "GET", path: "/admin/reconcile/some-job" },
  { method: "GET", path: "/admin/queues" },
  { method: "GET", path: "/admin/queues/api/queues" },
];

/** Credentials that must all be refused: none, wrong, near misses, the token in the wrong place. */
const wrongCredentials: Array<Record<string, string>> = [
  {},
  { authorization: "Bearer wrong" },
  { authorization: `Bearer ${adminToken}x` },
  { authorization: `Bearer ${adminToken.slice(0, -1)}` },
  { authorization: `Bearer ${adminToken.toUpperCase()}` },
  { authorization: adminToken },
  { authorization: "Bearer " },
  { authorization: basic("admin", "wrong") },
  { authorization: basic(adminToken, "") },
  { authorization: `Basic ${Buffer.from(adminToken).toString("base64")}` },
  { authorization: `Token ${adminToken}` },
  { "x-admin-token": adminToken },
];

async function call(base: string, endpoint: (typeof endpoints)[number], headers: Record<string, string>) {
  return fetch(`${base}${endpoint.path}`, {
    method: endpoint.method,
    body: endpoint.body,
    headers: { ...(endpoint.body ? { "content-type": "application/json" } : {}), ...headers },
  });
}

describe("security: the admin surface", () => {
  let withToken: TestService;
  let withoutToken: TestService;
  beforeAll(async () => {
    withToken = await startTestService({ ADMIN_TOKEN: adminToken, DOWNSTREAM_URL: "http://127.0.0.1:9/" });
    withoutToken = await startTestService({ DOWNSTREAM_URL: "http://127.0.0.1:9/" });
  });
  afterAll(async () => {
    await withToken?.close();
    await withoutToken?.close();
  });

  it("when an admin endpoint is called without the token, with a wrong one or a near miss, then 401 problem+json with a challenge, and the right token gets through", async () => {
    for (const endpoint of endpoints) {
      for (const headers of wrongCredentials) {
        const answer = await call(withToken.adminUrl, endpoint, headers);
        const what = `${endpoint.method} ${endpoint.path} with ${JSON.stringify(headers)}`;
        expect(answer.status, what).toBe(401);
        expect(answer.headers.get("content-type"), what).toMatch(/^application\/problem\+json/);
        expect(answer.headers.get("www-authenticate"), what).toMatch(/^(Bearer|Basic) realm=/);
        expect(((await answer.json()) as { detail: string }).detail, what).toContain("ADMIN_TOKEN");
      }
      for (const authorization of [`Bearer ${adminToken}`, basic("anyone", adminToken)]) {
        const answer = await call(withToken.adminUrl, endpoint, { authorization });
        expect([401, 403], `${endpoint.method} ${endpoint.path} with the right token`).not.toContain(answer.status);
        await answer.body?.cancel();
      }
    }
  });

  it("when ADMIN_TOKEN is unset, then the generated token (DATA_DIR/admin-token) is the only one every admin endpoint accepts", async () => {
    const generated = (await readFile(join(withoutToken.config.env.DATA_DIR, "admin-token"), "utf8")).trim();
    for (const endpoint of endpoints) {
      for (const headers of [{}, adminHeaders(adminToken), { authorization: "Bearer " }, { authorization: basic("admin", "") }] as Record<string, string>[]) {
        const answer = await call(withoutToken.adminUrl, endpoint, headers);
        expect(answer.status, `${endpoint.method} ${endpoint.path} with ${JSON.stringify(headers)}`).toBe(401);
        await answer.body?.cancel();
      }
      for (const authorization of [`Bearer ${generated}`, basic("anyone", generated)]) {
        const answer = await call(withoutToken.adminUrl, endpoint, { authorization });
        expect([401, 403], `${endpoint.method} ${endpoint.path} with the generated token`).not.toContain(answer.status);
        await answer.body?.cancel();
      }
    }
  });

  it("when /admin/* or /metrics is asked of the public port, then 404, with or without the token", async () => {
    for (const endpoint of [...endpoints, { method: "GET", path: "/metrics" }]) {
      for (const headers of [{}, adminHeaders(adminToken)] as Record<string, string>[]) {
        const answer = await call(withToken.publicUrl!, endpoint, headers);
        expect(answer.status, `${endpoint.method} ${endpoint.path} on the public port`).toBe(404);
        await answer.body?.cancel();
      }
    }
  });

  it("when nothing is configured, then the admin surface listens on loopback only, on its own port", () => {
    const { env } = loadConfig({});
    expect(env.ADMIN_HOST).toBe("127.0.0.1");
    expect(env.ADMIN_PORT).not.toBe(env.PORT);
    expect(withToken.adminUrl).not.toBe(withToken.publicUrl);
  });
});
