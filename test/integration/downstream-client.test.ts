import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createDownstreamClient } from "../../src/dispatch/downstream-client.js";
import { testRoute } from "../helpers/dispatch-harness.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { basicAuthorization } from "../helpers/credentials.js";

describe("downstream client", () => {
  const sinks: SinkServer[] = [];
  afterEach(async () => {
    await Promise.all(sinks.splice(0).map((sink) => sink.close()));
  });
  const sinkAt = async (...args: Parameters<typeof startSinkServer>) => {
    const sink = await startSinkServer(...args);
    sinks.push(sink);
    return sink;
  };

  it("when the route URL carries user info and a query, then the POST goes to its path and query with those as basic credentials, unless the route sets its own", async () => {
    const sink = await sinkAt();
    const url = new URL(sink.url);
    url.username = "hook";
    url.password = "p@ss word";
    url.pathname = "/in";
    url.search = "?key=k1";
    const client = createDownstreamClient(testRoute("creds", url.toString()));
    expect(await client.post({ "content-type": "application/json" }, '{"id":"1"}')).toEqual({ status: 200 });
    expect(await client.post({ authorization: "Bearer own" }, '{"id":"2"}')).toEqual({ status: 200 });
    client.close();
    const [first, second] = sink.requests;
    expect(first).toMatchObject({ method: "POST", url: "/in?key=k1", body: '{"id":"1"}' });
    expect(first!.headers.authorization).toBe(basicAuthorization("hook", "p@ss word"));
    expect(first!.headers["content-length"]).toBe("10");
    expect(second!.headers.authorization).toBe("Bearer own");
  });

  it("when the downstream answers an error, then its status, Retry-After and the start of its body come back, cleaned of the route's secrets", async () => {
    const sink = await sinkAt(() => ({ status: 429, headers: { "retry-after": "7" }, body: `slow down, token-123 ${"x".repeat(500)}` }));
    const client = createDownstreamClient(testRoute("errors", sink.url, { headers: { authorization: "Bearer token-123" } }));
    const result = await client.post({}, "{}");
    client.close();
    expect(result).toMatchObject({ status: 429, retryAfter: "7" });
    const detail = "detail" in result ? (result.detail ?? "") : "";
    expect(detail).toMatch(/^slow down, \S+ x+$/);
    expect(detail.length).toBeLessThanOrEqual(200);
    expect(JSON.stringify(result)).not.toContain("token-123");
  });

  it("when requests are in flight and abortAll is called, then each resolves at once with an error, and nothing is left hanging", async () => {
    const sink = await sinkAt(() => new Promise(() => {})); // never answers
    const client = createDownstreamClient(testRoute("held", sink.url, { timeoutMs: 60_000, concurrency: 2 }));
    const pending = [client.post({}, "{}"), client.post({}, "{}")];
    await sink.untilReceived(2);
    client.abortAll();
    const results = await Promise.all(pending);
    client.close();
    for (const result of results) expect(result).toEqual({ error: expect.stringMatching(/shutdown/) });
  });

  it("when an error answer's body drips in slower than timeoutMs, then the attempt ends at its deadline, as one with no answer", async () => {
    const server = createServer((_req, res) => {
      res.writeHead(503, { "content-type": "text/plain" });
      const drip = setInterval(() => res.write("."), 100);
      res.on("close", () => clearInterval(drip));
    });
    await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
    try {
      const client = createDownstreamClient(testRoute("dripping", `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, { timeoutMs: 500 }));
      expect(await client.post({}, "{}")).toEqual({ error: "no answer within 500 ms (the route's timeoutMs)" });
      client.close();
    } finally {
      server.closeAllConnections();
      await new Promise((ok) => server.close(ok));
    }
  });

  it("when a header cannot be sent, then the attempt fails for good at once, and the route's next requests still go out", async () => {
    const sink = await sinkAt();
    const client = createDownstreamClient(testRoute("odd", sink.url, { concurrency: 2 }));
    const refused = await Promise.all([1, 2, 3].map(() => client.post({ "webhook-id": "evt_事件" }, "{}")));
    for (const result of refused) expect(result).toEqual({ error: expect.stringMatching(/^the webhook-id header cannot be sent: its value has a character/), permanent: true });
    expect(await Promise.all([1, 2, 3].map(() => client.post({ "webhook-id": "evt_1" }, "{}")))).toEqual([{ status: 200 }, { status: 200 }, { status: 200 }]);
    client.close();
    expect(sink.requests).toHaveLength(3);
  });
});
