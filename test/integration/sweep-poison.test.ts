import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { tenantId, userEvent } from "../helpers/fixtures.js";
import { startSinkServer, type SinkServer } from "../helpers/sink-server.js";
import { startTestService, type TestService } from "../helpers/start-test-service.js";
import { until } from "./sweep-test-kit.js";
import { adminHeaders } from "../helpers/credentials.js";

const adminToken = "sweep-poison-admin-token";
const streamId = "est_38ANnv8pQhqsZrX2VFbftv";
const deep = (depth: number) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;

/**
 * A tenant of our own on 127.0.0.1: a token endpoint and the failed-deliveries list, which
 * answers `page` (JSON text, so records can be shaped as no client would write them) or
 * the status `listStatus` gives.
 */
async function startTenant(page: () => string, listStatus: () => number = () => 200): Promise<{ server: Server; url: string; listCalls: number }> {
  const tenant = { listCalls: 0 } as { server: Server; url: string; listCalls: number };
  tenant.server = createServer((req, res) => {
    req.resume();
    if (req.method === "POST" && req.url === "/oauth/token") {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ access_token: "token", expires_in: 86400 }));
    } else if (req.method === "GET" && req.url?.startsWith(`/api/v2/event-streams/${streamId}/deliveries?`)) {
      tenant.listCalls++;
      const status = listStatus();
      if (status !== 200) return void res.writeHead(status, { "content-type": "application/json" }).end('{"message":"down"}');
      res.writeHead(200, { "content-type": "application/json" }).end(page());
    } else {
      res.writeHead(404, { "content-type": "application/json" }).end('{"message":"not here"}');
    }
  });
  await new Promise<void>((ok) => tenant.server.listen(0, "127.0.0.1", ok));
  tenant.url = `http://127.0.0.1:${(tenant.server.address() as AddressInfo).port}`;
  return tenant;
}

function record(event: object | string, id: string): string {
  const attempts = [{ status: "failed", timestamp: new Date().toISOString(), error_message: "connect ECONNREFUSED" }];
  return `{"id":${JSON.stringify(id)},"event_stream_id":"${streamId}","status":"failed","event_type":"user.updated","attempts":${JSON.stringify(attempts)},"event":${typeof event === "string" ? event : JSON.stringify(event)}}`;
}

interface SweepStream {
  streamId: string;
  checkpoint: string | null;
  lastRunAt: string | null;
  found: number;
  recovered: number;
  lastError: string | null;
  unrecovered: number;
  unrecoveredSample: Array<{ eventId: string; reason: string }>;
}

describe("sweep: one record never holds back the others", () => {
  let service: TestService | undefined;
  let sink: SinkServer | undefined;
  let tenant: Awaited<ReturnType<typeof startTenant>> | undefined;
  afterEach(async () => {
    await service?.close();
    await sink?.close();
    await new Promise((ok) => tenant?.server.close(ok));
  });
  const start = async (env: Record<string, string> = {}) => {
    sink = await startSinkServer();
    service = await startTestService({
      DOWNSTREAM_URL: sink.url,
      ADMIN_TOKEN: adminToken,
      MGMT_API_BASE_URL: `${tenant!.url}/api/v2`,
      MGMT_TOKEN_URL: `${tenant!.url}/oauth/token`,
      MGMT_CLIENT_ID: "client",
      MGMT_CLIENT_SECRET: "secret",
      RECONCILE_SWEEP_STREAMS: streamId,
      RECONCILE_SWEEP_INTERVAL_SECONDS: "1",
      RECONCILE_SWEEP_LOOKBACK_SECONDS: "3600",
      STREAM_WATCH_INTERVAL_SECONDS: "0",
      ...env,
    });
  };
  const status = async (): Promise<SweepStream | undefined> => {
    const answer = await fetch(`${service!.adminUrl}/admin/sweep`, { headers: adminHeaders(adminToken) });
    return ((await answer.json()) as { streams: SweepStream[] }).streams.find((stream) => stream.streamId === streamId);
  };
  const metrics = async () => (await fetch(`${service!.adminUrl}/metrics`)).text();

  it("when a window holds records that cannot be read or stored among good ones, then the good ones and the deep one are recovered, the others counted unrecovered with their reasons, and the checkpoint advances", async () => {
    const good = [userEvent(), userEvent(), userEvent()];
    const deepId = tenantId("evt");
    const deepEvent = `{"id":"${deepId}","source":"urn:auth0:","specversion":"1.0","type":"user.updated","data":{"object":${deep(5000)}}}`;
    const garbledId = tenantId("evt");
    const surrogateId = tenantId("evt");
    const records = [
      record(good[0]!, good[0]!.id),
      record('"this is no event {"', garbledId),
      record(good[1]!, good[1]!.id),
      record(deepEvent, deepId),
      `{"event_stream_id":"${streamId}","status":"failed"}`,
      record(`{"id":"evt_\\ud800_1","source":"urn:auth0:","specversion":"1.0","type":"user.updated"}`, surrogateId),
      record(good[2]!, good[2]!.id),
    ];
    tenant = await startTenant(() => `{"deliveries":[${records.join(",")}]}`);
    await start();

    const ids = [...good.map((event) => event.id), deepId];
    await sink!.until((requests) => ids.every((id) => requests.some((request) => request.headers["webhook-id"] === id)), 60_000);
    expect(sink!.requests.find((request) => request.headers["webhook-id"] === deepId)!.body).toContain(deep(5000));
    await until("the checkpoint advances", async () => (await status())?.checkpoint != null);
    // A later run reads the same records again (the overlap): the good ones are here by then, and nothing is found or recovered twice.
    const firstRun = (await status())!.lastRunAt;
    await until("another sweep run", async () => (await status())?.lastRunAt !== firstRun);
    const stream = (await status())!;
    expect(stream.lastError).toBeNull();
    expect(stream).toMatchObject({ found: 7, recovered: 4, unrecovered: 3 });
    const reasons = new Map(stream.unrecoveredSample.map((entry) => [entry.eventId, entry.reason]));
    expect(reasons.get(garbledId)).toMatch(/does not read as a delivery record: event/);
    expect(reasons.get(surrogateId)).toMatch(/id must be well-formed Unicode/);
    expect([...reasons.keys()].find((id) => id.startsWith("unreadable record 5 of page"))).toBeDefined();
    const text = await metrics();
    expect(text).toContain(`streamkeeper_tenant_unrecovered_deliveries{stream="${streamId}"} 3`);
    expect(text).toMatch(new RegExp(`streamkeeper_sweep_lag_seconds\\{stream="${streamId}"\\} \\d`));
  });

  it("when an event set aside as unrecovered arrives later (redelivered, recovered by id), then the next sweep no longer counts it and its alert's gauge falls to 0", async () => {
    const later = userEvent();
    // The tenant's record of it cannot be read; the tenant never lists a success for it afterwards.
    tenant = await startTenant(() => `{"deliveries":[${record('"no event here {"', later.id)}]}`);
    await start();
    await until("the record set aside", async () => (await status())?.unrecovered === 1);
    expect(await metrics()).toContain(`streamkeeper_tenant_unrecovered_deliveries{stream="${streamId}"} 1`);
    expect((await service!.post(`/webhooks/${streamId}`, JSON.stringify(later))).status).toBe(202);
    await until("the arrived event no longer counted", async () => (await status())?.unrecovered === 0);
    expect((await status())!.unrecoveredSample).toEqual([]);
    expect(await metrics()).toContain(`streamkeeper_tenant_unrecovered_deliveries{stream="${streamId}"} 0`);
  });

  it("when a window asked for holds records that cannot be read, then each is listed as an error with its reason and counted error when run for real, not in a dry run", async () => {
    const good = userEvent();
    const garbledId = tenantId("evt");
    const records = [record(good, good.id), record('"this is no event {"', garbledId), `{"event_stream_id":"${streamId}","status":"failed"}`];
    tenant = await startTenant(() => `{"deliveries":[${records.join(",")}]}`);
    // No sweep: only the windows asked for here read the list.
    await start({ RECONCILE_SWEEP_INTERVAL_SECONDS: "0" });
    const errors = async () => Number(/^streamkeeper_reconcile_total\{outcome="error"\} (\S+)$/m.exec(await metrics())?.[1] ?? 0);
    const window = async (dryRun: boolean) => {
      const answer = await fetch(`${service!.adminUrl}/admin/sweep/window`, {
        method: "POST",
        headers: adminHeaders(adminToken, { "content-type": "application/json" }),
        body: JSON.stringify({ since: new Date(Date.now() - 3_600_000).toISOString(), streams: [streamId], dryRun }),
      });
      expect(answer.status).toBe(200);
      return (await answer.text()).trim().split("\n").map((line) => JSON.parse(line) as { eventId?: string; outcome?: string; done?: boolean });
    };
    const before = await errors();
    const dry = await window(true);
    expect(await errors()).toBe(before);
    const real = await window(false);
    expect(await errors()).toBe(before + 2);
    for (const lines of [dry, real]) {
      expect(lines.at(-1)).toMatchObject({ done: true });
      const outcomes = new Map(lines.slice(0, -1).map((line) => [line.eventId, line.outcome]));
      expect(outcomes.size).toBe(3);
      expect(outcomes.get(garbledId)).toMatch(/^error: the tenant's record does not read as a delivery record: event/);
      expect([...outcomes].find(([id]) => id?.startsWith("unreadable record 3 of page 1"))?.[1]).toMatch(/^error: the tenant's record does not read as a delivery record/);
    }
    expect(new Map(dry.map((line) => [line.eventId, line.outcome])).get(good.id)).toBe("would_recover");
    expect(new Map(real.map((line) => [line.eventId, line.outcome])).get(good.id)).toBe("recovered");
  });

  it("when the tenant's list fails (a transient fault), then the sweep stops and retries, the checkpoint stays null, and sweep_lag_seconds has a series anyway", async () => {
    let failing = true;
    const event = userEvent();
    tenant = await startTenant(() => `{"deliveries":[${record(event, event.id)}]}`, () => (failing ? 500 : 200));
    await start();
    await until("a failed sweep run", async () => (await status())?.lastError != null);
    expect((await status())!.checkpoint).toBeNull();
    const lag = (await metrics()).split("\n").find((line) => line.startsWith(`streamkeeper_sweep_lag_seconds{stream="${streamId}"}`));
    expect(lag).toBeDefined();
    expect(Number(lag!.split(" ").at(-1))).toBeGreaterThanOrEqual(3600);
    const callsWhileFailing = tenant.listCalls;
    failing = false;
    await sink!.until((requests) => requests.some((request) => request.headers["webhook-id"] === event.id), 60_000);
    expect(tenant.listCalls).toBeGreaterThan(callsWhileFailing);
    await until("the checkpoint advances", async () => (await status())?.checkpoint != null);
  });
});
