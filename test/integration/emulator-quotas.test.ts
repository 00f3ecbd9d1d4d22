import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "../../src/emulator/start-emulator.js";
import { call, getToken } from "./emulator-test-kit.js";

let emulator: Emulator;
beforeAll(async () => {
  emulator = await startEmulator({ rateLimit: 1000 });
});
afterAll(() => emulator?.close());

const list = (token: string) => call(emulator, "GET", "/api/v2/event-streams", { token });

describe("the emulator's per-client quotas (Auth0-RateLimit)", () => {
  it("when a client is added with a quota, then every answer to it announces the quota, one beyond it is 429 with Retry-After, and X-RateLimit-* keep showing the tenant's bucket", async () => {
    const added = await call(emulator, "POST", "/emulator/clients", {
      body: { client_id: "quota-app", client_secret: "quota-secret", scopes: ["read:event_streams"], quota: { requests: 2, seconds: 60 } },
    });
    expect(added).toMatchObject({ status: 201, body: { client_id: "quota-app", quota: { requests: 2, seconds: 60 } } });
    const token = await getToken(emulator, "quota-app", "quota-secret");
    const first = await list(token);
    expect(first.status).toBe(200);
    expect(first.headers.get("auth0-ratelimit")).toBe("client;q=2;t=60;r=1");
    expect((await list(token)).headers.get("auth0-ratelimit")).toBe("client;q=2;t=60;r=0");
    const refused = await list(token);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("auth0-ratelimit")).toBe("client;q=2;t=60;r=0");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(refused.headers.get("x-ratelimit-limit")).toBe("1000");
    expect(Number(refused.headers.get("x-ratelimit-remaining"))).toBeGreaterThan(900);
    // A client without a quota is not told of one.
    expect((await list(await getToken(emulator))).headers.get("auth0-ratelimit")).toBeNull();
  });

  it("when the quota of the default client is set and lifted through the control API, then its answers follow", async () => {
    const token = await getToken(emulator);
    const set = await fetch(`${emulator.url}/emulator/clients/emulator-client/quota`, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ requests: 50 }) });
    expect(set.status).toBe(200);
    expect(await set.json()).toEqual({ client_id: "emulator-client", quota: { requests: 50, seconds: 1 } });
    expect((await list(token)).headers.get("auth0-ratelimit")).toMatch(/^client;q=50;t=1;r=\d+$/);
    expect((await fetch(`${emulator.url}/emulator/clients/emulator-client/quota`, { method: "DELETE" })).status).toBe(200);
    expect((await list(token)).headers.get("auth0-ratelimit")).toBeNull();
  });

  it("when a quota is malformed or names an unknown client, then the answer says what to change", async () => {
    const put = (client: string, body: unknown) => fetch(`${emulator.url}/emulator/clients/${client}/quota`, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const bad = await put("emulator-client", { requests: 0 });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(await bad.json())).toContain("give at least 1 request");
    const unknown = await put("nobody", { requests: 5 });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { message: string }).message).toBe("No client nobody; add it first with POST /emulator/clients.");
  });

  it("when a client has called, then the call log counts what it was answered, per second", async () => {
    const { body } = await call(emulator, "GET", "/emulator/calls");
    const callers = (body as { callers: Array<{ caller: string; accepted: number; refused: number; acceptedPerSecond: Record<string, number> }> }).callers;
    const app = callers.find((caller) => caller.caller === "client:quota-app")!;
    expect(app).toMatchObject({ accepted: 2, refused: 1 });
    expect(Object.values(app.acceptedPerSecond).reduce((sum, count) => sum + count, 0)).toBe(2);
  });
});
