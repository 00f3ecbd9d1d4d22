import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/config/config.js";
import { createLogger } from "../../../src/logging/logger.js";
import { reportWhatIsOff } from "../../../src/service-config/report-what-is-off.js";
import { describeServiceConfig, type ServiceConfig } from "../../../src/service-config/service-config.js";
import { parseRoutes } from "../../../src/routes/load-routes.js";

const tenant = { MGMT_API_BASE_URL: "http://127.0.0.1:4010/api/v2", MGMT_TOKEN_URL: "http://127.0.0.1:4010/oauth/token", MGMT_CLIENT_ID: "id", MGMT_CLIENT_SECRET: "secret" };
const routes = parseRoutes(JSON.stringify([{ name: "crm", match: "user.*", url: "https://bot:hunter2@crm.example.com/hooks?x=1" }]), "routes.json");

function report(env: Record<string, string>, role: ServiceConfig["role"] = "all"): { lines: string[]; logged: { level: number; msg: string }[] } {
  const logged: { level: number; msg: string }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logged.push(JSON.parse(chunk.toString()) as { level: number; msg: string });
      done();
    },
  });
  const config = loadConfig(env);
  const lines = reportWhatIsOff(describeServiceConfig(config, routes, role), config.env, createLogger("info", sink));
  return { lines, logged };
}

describe("reportWhatIsOff", () => {
  it("when the tenant is not configured, then one warning says reconcile, the sweep and the stream watch are off and what to set", () => {
    const { lines, logged } = report({});
    expect(lines).toEqual(["reconcile, the sweep and the stream watch are off: set TENANT_DOMAIN (or MGMT_API_BASE_URL and MGMT_TOKEN_URL), MGMT_CLIENT_ID, MGMT_CLIENT_SECRET"]);
    expect(logged.map(({ level, msg }) => ({ level, msg }))).toEqual([{ level: 40, msg: lines[0] }]);
  });

  it("when the tenant is configured without PUBLIC_URL or RECONCILE_SWEEP_STREAMS, then the sweep and the stream watch are off, naming both, once", () => {
    expect(report(tenant).lines).toEqual(["the sweep and the stream watch are off: set PUBLIC_URL or RECONCILE_SWEEP_STREAMS"]);
    expect(report({ ...tenant, STREAM_AUTO_ENABLE: "true" }).lines).toEqual(["the sweep and the stream watch are off: set PUBLIC_URL or RECONCILE_SWEEP_STREAMS; STREAM_AUTO_ENABLE has no effect"]);
  });

  it("when an interval is 0, then that part is off, naming the setting", () => {
    const scoped = { ...tenant, PUBLIC_URL: "https://sk.example.com" };
    expect(report({ ...scoped, RECONCILE_SWEEP_OVERLAP_SECONDS: "0" }).lines).toEqual([
      "the sweep reads no window twice: RECONCILE_SWEEP_OVERLAP_SECONDS=0, so a delivery the tenant gives up on after the sweep read its window is never found; set it to a few minutes (default 600)",
    ]);
    expect(report({ ...scoped, RECONCILE_SWEEP_OVERLAP_SECONDS: "1" }).lines).toEqual([]);
    expect(report({ ...scoped, RECONCILE_SWEEP_INTERVAL_SECONDS: "0" }).lines).toEqual(["the sweep is off: RECONCILE_SWEEP_INTERVAL_SECONDS=0"]);
    expect(report({ ...scoped, STREAM_WATCH_INTERVAL_SECONDS: "0", STREAM_AUTO_ENABLE: "true" }).lines).toEqual(["the stream watch is off: STREAM_WATCH_INTERVAL_SECONDS=0; STREAM_AUTO_ENABLE has no effect"]);
  });

  it("when everything is configured, or the role is receiver, then nothing is said", () => {
    expect(report({ ...tenant, PUBLIC_URL: "https://sk.example.com" }).lines).toEqual([]);
    expect(report({}, "receiver").lines).toEqual([]);
  });
});

describe("describeServiceConfig", () => {
  it("when a route URL carries credentials, then the published one has none, and no secret setting appears", () => {
    const published = describeServiceConfig(loadConfig({ ...tenant, ADMIN_TOKEN: "admin-secret", WEBHOOK_USERNAME: "u", WEBHOOK_PASSWORD: "webhook-secret" }), routes, "worker");
    expect(published.routes).toEqual([{ name: "crm", match: ["user.*"], url: "https://crm.example.com", urlFingerprint: expect.stringMatching(/^[0-9a-f]{16}$/), timeoutMs: 10_000, concurrency: 10 }]);
    expect(published).toMatchObject({ role: "worker", tenantConfigured: true, sweep: { configured: false } });
    for (const secret of ["hunter2", "admin-secret", "webhook-secret", "secret\""]) expect(JSON.stringify(published)).not.toContain(secret);
  });
});
