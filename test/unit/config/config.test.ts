import { describe, expect, it } from "vitest";
import { loadConfig, requireTenant } from "../../../src/config/config.js";
import { problemsOf } from "../../helpers/config-problems.js";


describe("config", () => {
  it("when nothing is set, then the documented defaults (README.md#settings) apply and basic credentials are to be generated", () => {
    const config = loadConfig({});
    expect(config.env).toMatchObject({ PORT: 8080, HOST: "0.0.0.0", ADMIN_PORT: 9090, ADMIN_HOST: "127.0.0.1", QUEUE_PREFIX: "streamkeeper", WEBHOOK_AUTH: "basic", WEBHOOK_MAX_BODY_BYTES: 1_048_576, DEDUPE_TTL_SECONDS: 604_800, LOG_LEVEL: "info", DATA_DIR: "./.streamkeeper" });
    expect(config.webhookAuth).toEqual({ method: "basic", generated: true });
    expect(config.tenant).toBeUndefined();
  });

  it("when several values are bad, then every one is named with what to change", () => {
    const problems = problemsOf({ PORT: "eighty", WEBHOOK_AUTH: "digest", DEDUPE_TTL_SECONDS: "-1", QUEUE_PREFIX: "a:b" });
    expect(problems.join("\n")).toMatch(/^PORT: .*"eighty"/m);
    expect(problems.join("\n")).toMatch(/^WEBHOOK_AUTH: .*"digest"/m);
    expect(problems.join("\n")).toMatch(/^DEDUPE_TTL_SECONDS: /m);
    expect(problems.join("\n")).toMatch(/^QUEUE_PREFIX: use letters, digits, _ or - only/m);
  });

  it.each([
    [{ WEBHOOK_AUTH: "basic", WEBHOOK_USERNAME: "u" }, "WEBHOOK_PASSWORD is required when WEBHOOK_AUTH=basic"],
    [{ WEBHOOK_AUTH: "bearer" }, "WEBHOOK_TOKEN is required when WEBHOOK_AUTH=bearer"],
    [{ WEBHOOK_AUTH: "custom_header", WEBHOOK_HEADER_NAME: "X-Key" }, "WEBHOOK_HEADER_VALUE is required when WEBHOOK_AUTH=custom_header"],
    [{ WEBHOOK_USERNAME: "a:b", WEBHOOK_PASSWORD: "p" }, "WEBHOOK_USERNAME must not contain ':'"],
    [{ MGMT_TOKEN_URL: "http://127.0.0.1:4010/oauth/token" }, "MGMT_API_BASE_URL or TENANT_DOMAIN is required when MGMT_TOKEN_URL is set"],
    [{ REDIS_URL: "redis+cluster://127.0.0.1:7000", REDIS_MIN_REPLICAS: "1" }, "REDIS_MIN_REPLICAS works with one Redis primary, not with Redis Cluster"],
    // Settings that would undo dedupe (the ledger's, DEDUPE_TTL_SECONDS):
    [{ DEDUPE_TTL_SECONDS: "60", RECONCILE_SWEEP_INTERVAL_SECONDS: "0" }, "DEDUPE_TTL_SECONDS: give a whole number of seconds, 3600 or more; an hour at least"],
    [{ DEDUPE_TTL_SECONDS: "7200" }, "DEDUPE_TTL_SECONDS (7200) must be at least RECONCILE_SWEEP_LOOKBACK_SECONDS (86400) while the sweep runs"],
  ])("when %o, then the problem says: %s", (env, message) => {
    expect(problemsOf(env).join("\n")).toContain(message);
  });

  it("when TENANT_DOMAIN is set, then the API, token URL and audience derive from it", () => {
    const config = loadConfig({ TENANT_DOMAIN: "acme.us.auth0.com", MGMT_CLIENT_ID: "id", MGMT_CLIENT_SECRET: "secret" });
    expect(requireTenant(config)).toEqual({
      apiBaseUrl: "https://acme.us.auth0.com/api/v2",
      tokenUrl: "https://acme.us.auth0.com/oauth/token",
      audience: "https://acme.us.auth0.com/api/v2/",
      clientId: "id",
      clientSecret: "secret",
    });
  });

  it("when the overrides point at the emulator, then the audience follows the API base URL", () => {
    const config = loadConfig({ MGMT_API_BASE_URL: "http://127.0.0.1:4010/api/v2", MGMT_TOKEN_URL: "http://127.0.0.1:4010/oauth/token" });
    expect(config.tenant?.audience).toBe("http://127.0.0.1:4010/api/v2/");
    expect(() => requireTenant(config)).toThrow(/set MGMT_CLIENT_ID, MGMT_CLIENT_SECRET/);
  });

  it("when the sweep is off or reads less far back, then a shorter DEDUPE_TTL_SECONDS is fine", () => {
    expect(loadConfig({ DEDUPE_TTL_SECONDS: "7200", RECONCILE_SWEEP_INTERVAL_SECONDS: "0" }).env.DEDUPE_TTL_SECONDS).toBe(7200);
    expect(loadConfig({ DEDUPE_TTL_SECONDS: "7200", RECONCILE_SWEEP_LOOKBACK_SECONDS: "3600" }).env.DEDUPE_TTL_SECONDS).toBe(7200);
  });

  it("when delivered jobs are kept as long as ids are remembered, or longer, then that is fine: a later arrival of the id gets a job id of its own", () => {
    expect(loadConfig({ DEDUPE_TTL_SECONDS: "86400", COMPLETED_JOB_RETENTION_SECONDS: "86400" }).env.COMPLETED_JOB_RETENTION_SECONDS).toBe(86_400);
  });

  it("when a value is empty, then it counts as unset", () => {
    expect(loadConfig({ REDIS_URL: "", PORT: "" }).env).toMatchObject({ REDIS_URL: undefined, PORT: 8080 });
  });
});

describe("config errors", () => {
  it("when a value that may hold a credential is bad, then the message names the setting but not the value", () => {
    const problems = problemsOf({ REDIS_URL: "http://user:hunter2-secret@redis.internal:6379", WEBHOOK_MAX_BODY_BYTES: "12" });
    expect(problems.join("\n")).toMatch(/^REDIS_URL: /m);
    expect(problems.join("\n")).not.toContain("hunter2-secret");
    expect(problems.join("\n")).toContain('(got "12")');
  });
});
