import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createTenantClient } from "../../src/tenant/create-tenant-client.js";
import { TenantApiError } from "../../src/tenant/tenant-api-error.js";

interface Recorded {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
}

/** A real server on 127.0.0.1 recording every request, answering as `answer` says. */
async function startServer(answer: (request: Recorded) => { status: number; headers?: Record<string, string>; body?: string }) {
  const requests: Recorded[] = [];
  const server: Server = createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    const request = { method: req.method ?? "", url: req.url ?? "", headers: req.headers, body };
    requests.push(request);
    const reply = answer(request);
    res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers }).end(reply.body ?? "{}");
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  return { server, requests, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const clientSecret = "the-client-secret-never-to-leave";

describe("tenant client: redirects are never followed", () => {
  const servers: Server[] = [];
  afterEach(async () => {
    await Promise.all(servers.map((server) => new Promise((ok) => server.close(ok))));
    servers.length = 0;
  });

  it("when the token endpoint answers 307 to another origin, then no credential reaches it, and the error names the URL", async () => {
    const elsewhere = await startServer(() => ({ status: 200, body: '{"access_token":"stolen","expires_in":86400}' }));
    const tenant = await startServer((request) => (request.url === "/oauth/token" ? { status: 307, headers: { location: `${elsewhere.url}/oauth/token` } } : { status: 200, body: '{"eventStreams":[]}' }));
    servers.push(elsewhere.server, tenant.server);
    const client = createTenantClient({ apiBaseUrl: `${tenant.url}/api/v2`, tokenUrl: `${tenant.url}/oauth/token`, audience: "aud", clientId: "client", clientSecret, maxRetries: 3, sleep: async () => {} });

    const failure = await client.listEventStreams().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(TenantApiError);
    expect((failure as Error).message).toContain(`answered 307 at ${tenant.url}/oauth/token, a redirect to ${elsewhere.url}/oauth/token`);
    expect((failure as Error).message).toContain("MGMT_TOKEN_URL");
    expect((failure as Error).message).not.toContain(clientSecret);
    expect(elsewhere.requests).toEqual([]);
    // Not retried either: one request, and only to the configured origin.
    expect(tenant.requests.map((request) => request.url)).toEqual(["/oauth/token"]);
  });

  it("when an API call answers 302 to another origin, then the token does not follow it", async () => {
    const elsewhere = await startServer(() => ({ status: 200, body: '{"eventStreams":[]}' }));
    const tenant = await startServer((request) =>
      request.url === "/oauth/token" ? { status: 200, body: '{"access_token":"the-access-token","expires_in":86400}' } : { status: 302, headers: { location: `${elsewhere.url}/api/v2/event-streams` } },
    );
    servers.push(elsewhere.server, tenant.server);
    const client = createTenantClient({ apiBaseUrl: `${tenant.url}/api/v2`, tokenUrl: `${tenant.url}/oauth/token`, audience: "aud", clientId: "client", clientSecret, sleep: async () => {} });

    const failure = await client.listEventStreams().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(TenantApiError);
    expect((failure as Error).message).toMatch(/answered 302 at .*\/api\/v2\/event-streams, a redirect .*MGMT_API_BASE_URL/);
    expect(elsewhere.requests).toEqual([]);
  });
});
