import { describe, expect, it } from "vitest";
import { describeHealth } from "../../../src/admin/describe-health.js";
import type { Overview, RouteOverview, StreamOverview } from "../../../src/admin/overview.js";

const window = (count: number, missed: number, verdict: "met" | "missed" | "no_events") => ({ count, p50: 1, p99: 2, missed, verdict });

function route(name: string, changes: Partial<RouteOverview> = {}): RouteOverview {
  return {
    name,
    match: ["*"],
    ratePerSecond: null,
    filter: null,
    testEvents: "deliver",
    transform: null,
    deliveredPerMinute: 10,
    backlog: 0,
    lanes: { live: 0, late: 0 },
    oldestWaitingSeconds: 0,
    circuit: "closed",
    deadLetters: 0,
    staleLastDay: 0,
    freshness: { objectiveSeconds: 5, last5m: window(100, 0, "met"), lastDay: window(1000, 0, "met") },
    lastHour: null,
    ...changes,
  };
}

function stream(streamId: string, changes: Partial<StreamOverview> = {}): StreamOverview {
  return { streamId, status: "enabled", checkedAt: null, sweepLagSeconds: 0, lastRunAt: null, lastError: null, found: 0, recovered: 0, unrecovered: 0, ...changes };
}

const well: Parameters<typeof describeHealth>[0] = {
  routes: [route("crm")],
  streams: [stream("est_1")],
  pull: { state: "connected", offsetAt: null, lastEventAt: null, lastError: null },
  archive: { state: "up", lagSeconds: 0, detail: null },
  removedRoutes: [],
  unavailable: [],
} satisfies Pick<Overview, "routes" | "streams" | "pull" | "archive" | "removedRoutes" | "unavailable">;

describe("describeHealth: the operator view's first line", () => {
  it("when nothing is wrong, then it says nothing (the page shows all well)", () => {
    expect(describeHealth(well)).toEqual([]);
    // Off is a choice, not a fault; a removed route with nothing waiting is gone.
    expect(describeHealth({ ...well, pull: { ...well.pull!, state: "off" }, archive: { state: "off", lagSeconds: null, detail: "ARCHIVE=off" }, removedRoutes: [{ name: "old", waiting: 0 }] })).toEqual([]);
  });

  it("when each part fails, then each is named in one phrase, what loses events first", () => {
    const seen = describeHealth({
      routes: [route("crm", { circuit: "open" }), route("billing", { freshness: { objectiveSeconds: 5, last5m: window(0, 0, "no_events"), lastDay: window(200, 10, "missed") } })],
      streams: [stream("est_1", { status: "disabled" }), stream("est_2", { lastError: "403 from the tenant" })],
      pull: { state: "waiting", offsetAt: null, lastEventAt: null, lastError: "401 from the tenant: check MGMT_CLIENT_SECRET" },
      archive: { state: "down", lagSeconds: 40, detail: "Postgres does not answer" },
      removedRoutes: [{ name: "legacy", waiting: 2 }],
      unavailable: [],
    });
    expect(seen).toEqual([
      "stream est_1 is disabled at the tenant: it sends and keeps nothing",
      "archive down: Postgres does not answer; events wait in the outbox",
      "pull failing: 401 from the tenant: check MGMT_CLIENT_SECRET",
      "route crm: circuit open, not sending",
      "removed route legacy holds 2 events (streamkeeper routes move or drop)",
      "route billing: freshness objective 5 s missed (10 of 200 late)",
      "stream est_2: last sweep failed (403 from the tenant)",
    ]);
  });

  it("when the archive is far behind or Redis does not answer, then it says so; a route that met its objective in the last 5 minutes is well whatever its day", () => {
    expect(describeHealth({ ...well, archive: { state: "up", lagSeconds: 900, detail: null } })).toEqual(["archive 15 min behind"]);
    expect(describeHealth({ ...well, unavailable: ["queues", "circuits"] })).toEqual(["Redis does not answer: queues, circuits unknown"]);
    expect(describeHealth({ ...well, routes: [route("crm", { freshness: { objectiveSeconds: 5, last5m: window(100, 0, "met"), lastDay: window(1000, 50, "missed") } })] })).toEqual([]);
  });
});
