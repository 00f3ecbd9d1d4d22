import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/logging/logger.js";
import { createTenantClient, type TenantClientOptions } from "../../src/tenant/create-tenant-client.js";
import {
  TenantNetworkError,
  TenantResponseError,
  TenantServerError,
  TenantUnauthorizedError,
} from "../../src/tenant/tenant-api-error.js";

/**
 * Faults the emulator does not make on purpose, from a small real HTTP server: a reset
 * header without Retry-After, a first token refused, 5xx, a refused connection, echoed
 * credentials, a body of the wrong shape, and a recorded real delivery record.
 */
const streamId = "est_aD5AUDqZbHFcMoEx2LxAk9";
const eventId = "evt_q273LFcsfrNovuzswy8qBz";
const secret = "very-secret-client-value";
const record: unknown = JSON.parse(readFileSync(new URL("../unit/tenant/fixtures/delivery-record.example.json", import.meta.url), "utf8"));

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;
let server: Server;
let baseUrl: string;
let api: Handler;
let tokens: string[];
let apiAuth: string[];

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body));
}

const stream = { id: streamId, name: "s", subscriptions: [{ event_type: "user.created" }], destination: { type: "webhook", configuration: { webhook_endpoint: "https://h.example.com" } }, status: "enabled" };

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      if (req.url === "/oauth/token") {
        const form = new URLSearchParams(body);
        if (form.get("client_secret") !== secret || form.get("grant_type") !== "client_credentials") {
          return json(res, 401, { error: "access_denied", error_description: `Unauthorized: client_secret=${form.get("client_secret")}` });
        }
        const token = `token-${tokens.length + 1}`;
        tokens.push(token);
        return json(res, 200, { access_token: token, token_type: "Bearer", expires_in: 86400 });
      }
      apiAuth.push(req.headers.authorization ?? "");
      api(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
});

beforeEach(() => {
  tokens = [];
  apiAuth = [];
  api = (_req, res) => json(res, 200, { eventStreams: [stream] });
});

function clientOf(overrides: Partial<TenantClientOptions> = {}) {
  const waits: number[] = [];
  const client = createTenantClient({
    apiBaseUrl: `${baseUrl}/api/v2`,
    tokenUrl: `${baseUrl}/oauth/token`,
    audience: `${baseUrl}/api/v2/`,
    clientId: "faults-client",
    clientSecret: secret,
    // Records the waits instead of sleeping them: these tests check the decisions, not the clock.
    sleep: async (ms) => void waits.push(ms),
    ...overrides,
  });
  return { client, waits };
}

describe("tenant client faults", () => {
  it("when a 429 carries only X-RateLimit-Reset, then the client waits until that second and succeeds", async () => {
    let calls = 0;
    api = (_req, res) => {
      calls += 1;
      const reset = String(Math.ceil(Date.now() / 1000) + 2);
      if (calls === 1) return json(res, 429, { statusCode: 429, error: "Too Many Requests", message: "Global limit has been reached", errorCode: "too_many_requests" }, { "x-ratelimit-limit": "10", "x-ratelimit-remaining": "0", "x-ratelimit-reset": reset });
      json(res, 200, { eventStreams: [stream] }, { "x-ratelimit-limit": "10", "x-ratelimit-remaining": "9", "x-ratelimit-reset": reset });
    };
    const { client, waits } = clientOf();
    const page = await client.listEventStreams();
    expect(page.eventStreams).toHaveLength(1);
    expect(waits).toHaveLength(1);
    expect(waits[0]).toBeGreaterThan(1000);
    expect(waits[0]).toBeLessThanOrEqual(3000);
    expect(client.rateLimit()).toMatchObject({ limit: 10, remaining: 9 });
  });

  it("when the API rejects the first token, then one new token is fetched and the call succeeds", async () => {
    api = (req, res) => (req.headers.authorization === "Bearer token-1" ? json(res, 401, { statusCode: 401, error: "Unauthorized", message: "Invalid token" }) : json(res, 200, stream));
    const { client } = clientOf();
    expect((await client.getEventStream(streamId)).id).toBe(streamId);
    expect(tokens).toEqual(["token-1", "token-2"]);
    expect(apiAuth).toEqual(["Bearer token-1", "Bearer token-2"]);
  });

  it("when a call waits for its pacer slot longer than its timeout, then it is still sent and answered: the timeout runs from the send", async () => {
    // The slot (create-paced-tenant.ts takes the shared pacer's here) comes after 300 ms; the request must follow it.
    let slotGiven = false;
    const servedAfterSlot: boolean[] = [];
    api = (_req, res) => (servedAfterSlot.push(slotGiven), json(res, 200, { eventStreams: [stream] }));
    const slot = () => new Promise<void>((ok) => setTimeout(() => ((slotGiven = true), ok()), 300));
    const { client } = clientOf({ timeoutMs: 200, beforeRequest: slot });
    expect((await client.listEventStreams()).eventStreams).toHaveLength(1);
    expect(servedAfterSlot).toEqual([true]);
  });

  it("when the API answers 403 to a token issued before a scope was granted, then one new token is fetched and the call succeeds; a 403 again within 15 minutes costs no further token", async () => {
    const forbidden = (res: ServerResponse) => json(res, 403, { statusCode: 403, error: "Forbidden", message: "Insufficient scope, expected any of: read:event_streams", errorCode: "insufficient_scope" });
    // The scope was granted after token-1 was issued: only later tokens carry it.
    api = (req, res) => (req.headers.authorization === "Bearer token-1" ? forbidden(res) : json(res, 200, stream));
    const { client } = clientOf();
    expect((await client.getEventStream(streamId)).id).toBe(streamId);
    expect(tokens).toEqual(["token-1", "token-2"]);
    // Taken away again: the 403 is thrown, and no token is fetched for it within the quarter hour.
    api = (_req, res) => forbidden(res);
    expect(await client.getEventStream(streamId).catch((error: Error) => error.name)).toBe("TenantForbiddenError");
    expect(tokens).toEqual(["token-1", "token-2"]);
    expect(apiAuth).toEqual(["Bearer token-1", "Bearer token-2", "Bearer token-2"]);
  });

  it("when the API rejects every token, then the refresh happens once and the 401 is thrown", async () => {
    api = (_req, res) => json(res, 401, { statusCode: 401, error: "Unauthorized", message: "Invalid signature" });
    const { client } = clientOf();
    const error = await client.getDelivery(streamId, eventId).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TenantUnauthorizedError);
    expect((error as TenantUnauthorizedError).tenantMessage).toBe("Invalid signature");
    expect(tokens).toHaveLength(2);
    expect(apiAuth).toHaveLength(2);
  });

  it("when the token endpoint refuses and echoes the secret, then the error names the settings and hides the secret", async () => {
    const { client } = clientOf({ clientSecret: "wrong-secret-echoed-back" });
    const error = await client.listEventStreams().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TenantUnauthorizedError);
    expect((error as TenantUnauthorizedError).operation).toBe("token");
    expect((error as TenantUnauthorizedError).errorCode).toBe("access_denied");
    expect((error as Error).message).toContain("MGMT_CLIENT_SECRET");
    expect((error as Error).message).not.toContain("wrong-secret-echoed-back");
    expect(JSON.stringify(error)).not.toContain("wrong-secret-echoed-back");
  });

  it("when the tenant answers 5xx, then the client retries with growing backoff and gives up after maxRetries", async () => {
    let calls = 0;
    api = (_req, res) => {
      calls += 1;
      json(res, 503, { statusCode: 503, error: "Service Unavailable", message: "try later" });
    };
    const { client, waits } = clientOf({ maxRetries: 2 });
    await expect(client.listEventStreams()).rejects.toBeInstanceOf(TenantServerError);
    expect(calls).toBe(3);
    expect(waits).toHaveLength(2);
    expect(waits[1]!).toBeGreaterThanOrEqual(500);
  });

  it("when a 404 or other 4xx comes, then there is no retry", async () => {
    let calls = 0;
    api = (_req, res) => {
      calls += 1;
      json(res, 400, { statusCode: 400, error: "Bad Request", message: "Payload validation error" });
    };
    const { client, waits } = clientOf();
    await expect(client.listEventStreams()).rejects.toThrow("list_event_streams: the tenant refused the request (400 Payload validation error)");
    expect(calls).toBe(1);
    expect(waits).toEqual([]);
  });

  it("when nothing listens, then a network error with status 0 comes after the retries", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const { client, waits } = clientOf({ apiBaseUrl: `http://127.0.0.1:${port}/api/v2` });
    const error = await client.listEventStreams().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TenantNetworkError);
    expect((error as TenantNetworkError).status).toBe(0);
    expect((error as Error).message).toMatch(/cannot reach the tenant at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\); check MGMT_API_BASE_URL/);
    expect(waits).toHaveLength(3);
  });

  it("when the tenant sends a recorded real delivery record, then it is parsed without loss", async () => {
    api = (req, res) => (req.url === `/api/v2/event-streams/${streamId}/deliveries/${eventId}` ? json(res, 200, record) : json(res, 404, {}));
    const { client } = clientOf();
    expect(await client.getDelivery(streamId, eventId)).toEqual(record);
  });

  it("when a body does not have the expected shape, then the error names the operation and the field", async () => {
    api = (_req, res) => json(res, 200, { eventStreams: [{ ...stream, status: "paused" }] });
    const { client } = clientOf();
    const error = await client.listEventStreams().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TenantResponseError);
    expect((error as TenantResponseError).field).toBe("eventStreams[0].status");
    expect((error as Error).message).toMatch(/^list_event_streams: unexpected answer from the tenant at eventStreams\[0\]\.status/);
  });

  it("when a cursor comes back twice, then paging stops with an error instead of looping", async () => {
    api = (_req, res) => json(res, 200, { eventStreams: [stream], next: "same" });
    const { client } = clientOf();
    const seen: string[] = [];
    const iterate = async () => {
      for await (const s of client.eventStreams()) seen.push(s.id);
    };
    await expect(iterate()).rejects.toThrow(/came back twice/);
    expect(seen).toHaveLength(2);
  });

  it("when calls retry and refresh tokens, then neither the token nor the secret reaches the log", async () => {
    const lines: string[] = [];
    const logger = createLogger("trace", new Writable({ write: (chunk: Buffer, _enc, done) => (lines.push(chunk.toString()), done()) }));
    let calls = 0;
    api = (req, res) => {
      calls += 1;
      if (req.headers.authorization === "Bearer token-1") return json(res, 401, { message: "Invalid token" });
      if (calls < 4) return json(res, 503, { message: "busy" });
      json(res, 200, stream);
    };
    const { client } = clientOf({ logger });
    await client.getEventStream(streamId);
    expect(lines.length).toBeGreaterThan(0);
    const log = lines.join("");
    for (const value of ["token-1", "token-2", secret]) expect(log).not.toContain(value);
  });
});
