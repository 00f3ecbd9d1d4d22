import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as delay } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "../../src/emulator/start-emulator.js";
import { control } from "./emulator-test-kit.js";
import { registry } from "../../src/metrics/registry.js";
import { createTenantClient, type TenantClientOptions } from "../../src/tenant/create-tenant-client.js";
import { TenantForbiddenError, TenantNotFoundError, TenantUnauthorizedError, TenantValidationError } from "../../src/tenant/tenant-api-error.js";

let emu: Emulator;
let refusing: Server;
let refusingUrl: string;

/** Counts token requests while the real fetch does the work. */
function countingFetch() {
  const counts = { token: 0, api: 0 };
  const wrapped: typeof fetch = (input, init) => {
    if (String(input).includes("/oauth/token")) counts.token += 1;
    else counts.api += 1;
    return fetch(input, init);
  };
  return { fetch: wrapped, counts };
}

function clientOf(overrides: Partial<TenantClientOptions> = {}) {
  return createTenantClient({
    apiBaseUrl: emu.apiBaseUrl,
    tokenUrl: emu.tokenUrl,
    audience: emu.audience,
    clientId: "emulator-client",
    clientSecret: "emulator-secret",
    ...overrides,
  });
}

async function createStream(name: string, endpoint = "https://hooks.example.com/webhooks", type = "user.created") {
  return control<{ id: string }>(emu, "/streams", {
    name,
    subscriptions: [{ event_type: type }],
    destination: { type: "webhook", configuration: { webhook_endpoint: endpoint, webhook_authorization: { method: "bearer", token: "stream-secret-token" } } },
  });
}

async function addClient(clientId: string, scopes: string[], global = true) {
  await control(emu, "/clients", { client_id: clientId, client_secret: `${clientId}-secret`, scopes, global });
  return clientOf({ clientId, clientSecret: `${clientId}-secret` });
}

async function metricValue(name: string, labels: Record<string, string>): Promise<number> {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  const value = metric?.values.find((v) => Object.entries(labels).every(([key, wanted]) => v.labels[key] === wanted));
  return value?.value ?? 0;
}

beforeAll(async () => {
  emu = await startEmulator({ timeScale: 0.01 });
  // A webhook endpoint that always fails, so deliveries to it end `failed` with the event stored.
  refusing = createServer((_req, res) => res.writeHead(503).end("down"));
  await new Promise<void>((resolve) => refusing.listen(0, "127.0.0.1", resolve));
  refusingUrl = `http://127.0.0.1:${(refusing.address() as AddressInfo).port}/webhooks`;
});

afterAll(async () => {
  await emu?.close();
  await new Promise((resolve) => refusing?.close(resolve));
});

describe("tenant client against the emulator", () => {
  it("when streams span several pages, then the iterator follows next to the end and each page has at most take", async () => {
    const created = [];
    for (let i = 0; i < 7; i++) created.push((await createStream(`page-${i}`)).id);
    const client = clientOf();
    const first = await client.listEventStreams({ take: 3 });
    expect(first.eventStreams).toHaveLength(3);
    expect(first.next).toEqual(expect.any(String));
    const all = [];
    for await (const stream of client.eventStreams({ take: 3 })) all.push(stream.id);
    expect(all).toEqual(expect.arrayContaining(created));
    expect(new Set(all).size).toBe(all.length);
  });

  it("when take is out of range, then the client refuses before any request, naming the range", async () => {
    const { fetch, counts } = countingFetch();
    const client = clientOf({ fetch });
    for (const take of [0, 101]) {
      const refused = client.listEventStreams({ take });
      await expect(refused).rejects.toBeInstanceOf(TenantValidationError);
      await expect(refused).rejects.toThrow(/take/);
    }
    // Neither a token nor an API request went out.
    expect(counts).toEqual({ token: 0, api: 0 });
  });

  it("when many calls start at once, then one token request serves them all", async () => {
    const { fetch, counts } = countingFetch();
    const client = clientOf({ fetch });
    const { id } = await createStream("concurrent");
    const streams = await Promise.all(Array.from({ length: 25 }, () => client.getEventStream(id)));
    expect(streams.every((stream) => stream.id === id)).toBe(true);
    expect(counts).toEqual({ token: 1, api: 25 });
    await client.listEventStreams({ take: 1 });
    expect(counts.token).toBe(1);
  });

  it("when the emulator restarts with a new signing key, then a 401 fetches a new token once and the call succeeds", async () => {
    const restarted = await startEmulator({ timeScale: 0.01 });
    const port = Number(new URL(restarted.url).port);
    const { fetch, counts } = countingFetch();
    const options = { apiBaseUrl: restarted.apiBaseUrl, tokenUrl: restarted.tokenUrl, audience: restarted.audience, clientId: "emulator-client", clientSecret: "emulator-secret", fetch };
    const client = createTenantClient(options);
    await client.listEventStreams();
    await restarted.close();
    const again = await startEmulator({ timeScale: 0.01, port });
    try {
      const page = await client.listEventStreams();
      expect(page.eventStreams).toEqual([]);
      expect(counts.token).toBe(2);
    } finally {
      await again.close();
    }
  });

  it("when the client lacks read:event_deliveries, then the 403 error names the scope and how to grant it", async () => {
    const client = await addClient("no-deliveries", ["read:event_streams"]);
    const { id } = await createStream("scoped");
    const error = await client.getDelivery(id, "evt_7PhFNYbTW8At5NiLxgUn4D").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TenantForbiddenError);
    expect((error as TenantForbiddenError).message).toContain(
      "insufficient scope: the client needs read:event_deliveries; grant it to the application in the tenant",
    );
    expect((error as TenantForbiddenError).errorCode).toBe("insufficient_scope");
    expect((error as Error).message).not.toContain("no-deliveries-secret");
  });

  it("when the client is not global, then reading delivery history is a 401 that says so", async () => {
    const client = await addClient("not-global", ["read:event_streams", "read:event_deliveries"], false);
    const { id } = await createStream("global-only");
    const error = await client.getDelivery(id, "evt_7PhFNYbTW8At5NiLxgUn4D").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TenantUnauthorizedError);
    expect((error as Error).message).toMatch(/not global.*global client/);
  });

  it("when the stream or event does not exist, then getDelivery answers undefined and getEventStream throws not found", async () => {
    const client = clientOf();
    const { id } = await createStream("empty");
    expect(await client.getDelivery(id, "evt_7PhFNYbTW8At5NiLxgUn4D")).toBeUndefined();
    expect(await client.getDelivery("est_aD5AUDqZbHFcMoEx2LxAk9", "evt_7PhFNYbTW8At5NiLxgUn4D")).toBeUndefined();
    const error = await client.getEventStream("est_aD5AUDqZbHFcMoEx2LxAk9").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TenantNotFoundError);
    expect((error as TenantNotFoundError).status).toBe(404);
    expect((error as TenantNotFoundError).operation).toBe("get_event_stream");
  });

  it("when a delivery failed for good, then its record comes back with the whole stored event", async () => {
    const { id: streamId } = await createStream("failing", refusingUrl, "user.deleted");
    const { id: eventId } = await control<{ id: string }>(emu, "/events", { type: "user.deleted", data: { object: { user_id: "auth0|1" } } });
    const client = clientOf();
    const deadline = Date.now() + 30_000;
    let record = await client.getDelivery(streamId, eventId);
    while (record?.status !== "failed" && Date.now() < deadline) {
      await delay(20);
      record = await client.getDelivery(streamId, eventId);
    }
    expect(record).toMatchObject({ id: eventId, event_stream_id: streamId, status: "failed", event_type: "user.deleted" });
    expect(record?.attempts).toHaveLength(4);
    expect(record?.event).toMatchObject({ id: eventId, type: "user.deleted", a0stream: streamId, data: { object: { user_id: "auth0|1" } } });
  });

  it("when a stream is updated, then the answer is the full stream without the write-only secret", async () => {
    const client = clientOf();
    const { id } = await createStream("before");
    const updated = await client.updateEventStream(id, {
      name: "after",
      status: "disabled",
      subscriptions: [{ event_type: "user.updated" }],
      destination: {
        type: "webhook",
        configuration: { webhook_endpoint: "http://127.0.0.1:9/webhooks", webhook_authorization: { method: "basic", username: "sk", password: "write-only-pass" } },
      },
    });
    expect(updated).toMatchObject({ id, name: "after", status: "disabled", subscriptions: [{ event_type: "user.updated" }] });
    expect(updated.destination.configuration?.webhook_authorization).toEqual({ method: "basic", username: "sk" });
    await expect(client.updateEventStream(id, { status: "paused" as "enabled" })).rejects.toThrow("status: use enabled or disabled");
  });

  it("when a token exchange profile is deleted twice, then both succeed", async () => {
    const { id } = await control<{ id: string }>(emu, "/token-exchange-profiles", {});
    const client = clientOf();
    await client.deleteTokenExchangeProfile(id);
    await client.deleteTokenExchangeProfile(id);
    expect((await control<{ ids: string[] }>(emu, "/token-exchange-profiles")).ids).not.toContain(id);
  });

  it("when calls are answered, then the request counter and the rate-limit headers are recorded", async () => {
    const client = clientOf();
    expect(client.rateLimit()).toBeUndefined();
    const before = await metricValue("streamkeeper_mgmt_api_requests_total", { operation: "list_event_streams", status: "200" });
    await client.listEventStreams({ take: 1 });
    expect(await metricValue("streamkeeper_mgmt_api_requests_total", { operation: "list_event_streams", status: "200" })).toBe(before + 1);
    expect(client.rateLimit()).toEqual({ limit: expect.any(Number), remaining: expect.any(Number), reset: expect.any(Number) });
    expect(await metricValue("streamkeeper_mgmt_api_rate_limit_remaining", {})).toBe(client.rateLimit()?.remaining);
  });
});

describe("tenant client against a rate-limited emulator", () => {
  it("when the bucket is empty, then the client waits as told and succeeds", async () => {
    const limited = await startEmulator({ timeScale: 0.01, rateLimit: 2 });
    try {
      const waits: number[] = [];
      const client = createTenantClient({
        apiBaseUrl: limited.apiBaseUrl,
        tokenUrl: limited.tokenUrl,
        audience: limited.audience,
        clientId: "emulator-client",
        clientSecret: "emulator-secret",
        sleep: (ms) => {
          waits.push(ms);
          return delay(ms);
        },
      });
      const before = await metricValue("streamkeeper_mgmt_api_requests_total", { operation: "list_event_streams", status: "429" });
      // At once: one after another, a loaded machine could take long enough per call for the bucket to refill.
      await Promise.all(Array.from({ length: 6 }, () => client.listEventStreams()));
      expect(waits.length).toBeGreaterThan(0);
      expect(waits.every((ms) => ms > 0 && ms <= 2000)).toBe(true);
      expect(await metricValue("streamkeeper_mgmt_api_requests_total", { operation: "list_event_streams", status: "429" })).toBeGreaterThan(before);
      expect(client.rateLimit()?.limit).toBe(2);
    } finally {
      await limited.close();
    }
  });
});
