import { describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/config/config.js";
import { problemsOf } from "../../helpers/config-problems.js";

const tenant = { MGMT_API_BASE_URL: "http://127.0.0.1:4999/api/v2", MGMT_TOKEN_URL: "http://127.0.0.1:4999/oauth/token", MGMT_CLIENT_ID: "id", MGMT_CLIENT_SECRET: "secret" };

describe("the pull's settings", () => {
  it("when PULL is unset, then the pull is off and its defaults are the contract's", () => {
    const { env } = loadConfig({});
    expect([env.PULL, env.PULL_START, env.PULL_OVERLAP_SECONDS, env.PULL_FAILOVER_SECONDS, env.PULL_EVENT_TYPES]).toEqual(["off", "now", 300, 10, undefined]);
  });

  it("when PULL=on without the tenant's client settings, then the start is refused naming them", () => {
    expect(problemsOf({ PULL: "on" })).toEqual([expect.stringMatching(/^PULL=on reads the tenant's Events API: set TENANT_DOMAIN .*MGMT_CLIENT_ID, MGMT_CLIENT_SECRET .*or set PULL=off$/)]);
  });

  it("when the values are wrong, then each is named with what to give", () => {
    const problems = problemsOf({ ...tenant, PULL: "yes", PULL_EVENT_TYPES: "user.created,user.exploded", PULL_START: "last week", PULL_FAILOVER_SECONDS: "0" });
    expect(problems).toEqual([
      'PULL: give on or off (got "yes")',
      expect.stringMatching(/^PULL_EVENT_TYPES.*: give the tenant's event types, such as user\.created, separated by commas \(got "user\.created,user\.exploded"\)$/),
      'PULL_START: give now, or a duration back from now (90m, 6h, 7d), a date (2026-11-25: its midnight UTC) or a time in ISO 8601 (2026-11-25T06:35:17Z) (got "last week")',
      expect.stringMatching(/^PULL_FAILOVER_SECONDS: .*seconds.* \(got "0"\)$/),
    ]);
  });

  it("when PULL_START reaches further back than DEDUPE_TTL_SECONDS, then the start is refused (events the push had then would be delivered again); within it, taken", () => {
    expect(problemsOf({ ...tenant, PULL: "on", PULL_START: "30d" })).toEqual([
      "PULL_START (30d) reaches further back than DEDUPE_TTL_SECONDS (604800 s): ids older than that are forgotten, so events the push delivered then would be delivered again; give a later PULL_START, or a longer DEDUPE_TTL_SECONDS",
    ]);
    expect(problemsOf({ ...tenant, PULL: "on", PULL_START: new Date(Date.now() - 8 * 86_400_000).toISOString() })).toHaveLength(1);
    for (const start of ["7d", "6d", "now", new Date(Date.now() - 86_400_000).toISOString()]) expect(loadConfig({ ...tenant, PULL: "on", PULL_START: start }).env.PULL_START, start).toBe(start);
    expect(loadConfig({ ...tenant, PULL: "on", PULL_START: "30d", DEDUPE_TTL_SECONDS: String(31 * 86_400) }).env.PULL_START).toBe("30d");
  });

  it("when PULL_EVENT_TYPES lists types, then they are read as a list", () => {
    expect(loadConfig({ ...tenant, PULL: "on", PULL_EVENT_TYPES: "user.created, group.created" }).env.PULL_EVENT_TYPES).toEqual(["user.created", "group.created"]);
  });
});
