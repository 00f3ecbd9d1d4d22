import { describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/config/config.js";
import { pointsAt, sweepPlan, sweepScopeOf, sweepVerdict } from "../../../src/streams/swept-streams.js";
import type { EventStream } from "../../../src/tenant/event-stream.js";

const ours = "est_aD5AUDqZbHFcMoEx2LxAk9";
const theirs = "est_38ANnv8pQhqsZrX2VFbftv";

function stream(id: string, endpoint: string): EventStream {
  return {
    id,
    name: id,
    status: "enabled",
    subscriptions: [{ event_type: "user.created" }],
    destination: { type: "webhook", configuration: { webhook_endpoint: endpoint, webhook_authorization: { method: "basic", username: "u" } } },
  };
}

describe("sweepScopeOf", () => {
  it("when neither RECONCILE_SWEEP_STREAMS nor PUBLIC_URL is set, then nothing is swept", () => {
    expect(sweepScopeOf(loadConfig({}).env)).toBeUndefined();
  });

  it("when both are set, then the ids are listed and PUBLIC_URL loses its trailing slash", () => {
    const env = loadConfig({ RECONCILE_SWEEP_STREAMS: ` ${ours}, ${theirs} `, PUBLIC_URL: "https://hooks.example.com/base/" }).env;
    expect(sweepScopeOf(env)).toEqual({ streamIds: [ours, theirs], publicUrl: "https://hooks.example.com/base" });
  });

  it("when a setting is malformed, then the error says what to give", () => {
    expect(() => loadConfig({ RECONCILE_SWEEP_STREAMS: "stream-1" })).toThrow(/give stream ids such as est_/);
    expect(() => loadConfig({ PUBLIC_URL: "http://hooks.example.com" })).toThrow(/use https:\/\/ \(http:\/\/ only on 127\.0\.0\.1/);
    expect(() => loadConfig({ PUBLIC_URL: "http://127.0.0.1:8080" }).env.PUBLIC_URL).not.toThrow();
  });
});

describe("sweepVerdict", () => {
  it("when only PUBLIC_URL is set, then a stream is swept only when its endpoint is at or below it", () => {
    const scope = { publicUrl: "https://hooks.example.com" };
    expect(sweepVerdict(stream(ours, `https://hooks.example.com/webhooks/${ours}`), scope)).toEqual({ swept: true });
    expect(sweepVerdict(stream(theirs, "https://hooks.example.com.evil.net/webhooks/x"), scope)).toEqual({ swept: false, reason: "points_elsewhere" });
    expect(sweepVerdict(stream(theirs, "https://other.example.com/hook"), scope)).toEqual({ swept: false, reason: "points_elsewhere" });
  });

  it("when streams are named, then others are not swept, and a named one pointing elsewhere neither", () => {
    const scope = { streamIds: [ours, theirs], publicUrl: "https://hooks.example.com" };
    expect(sweepVerdict(stream(ours, `https://hooks.example.com/webhooks/${ours}`), scope)).toEqual({ swept: true });
    expect(sweepVerdict(stream(theirs, "https://other.example.com/hook"), scope)).toEqual({ swept: false, reason: "points_elsewhere" });
    expect(sweepVerdict(stream("est_zzzzzzzzzzzzzzzzzzzzzz", `https://hooks.example.com/webhooks/x`), scope)).toEqual({ swept: false, reason: "not_named" });
  });

  it("when only the ids are named, then they are swept wherever they point (the operator said so)", () => {
    expect(sweepVerdict(stream(ours, "https://anything.example.com/"), { streamIds: [ours] })).toEqual({ swept: true });
  });

  it("when a stream has no webhook endpoint, then it points nowhere", () => {
    const other: EventStream = { ...stream(ours, ""), destination: { type: "eventbridge" } };
    expect(pointsAt(other, "https://hooks.example.com")).toBe(false);
  });
});

describe("sweepPlan", () => {
  const scoped = { PUBLIC_URL: "https://sk.example.com" };

  it("when the tenant, a scope and an interval are there, then the sweep is on over that scope", () => {
    expect(sweepPlan(loadConfig(scoped).env, true)).toEqual({ on: true, scope: { publicUrl: "https://sk.example.com", streamIds: undefined } });
  });

  it("when a part is missing, then it is off, saying the first missing part: tenant, then scope, then interval", () => {
    expect(sweepPlan(loadConfig({}).env, false)).toMatchObject({ on: false, whyOff: "no_tenant" });
    expect(sweepPlan(loadConfig(scoped).env, false)).toMatchObject({ on: false, whyOff: "no_tenant", scope: { publicUrl: "https://sk.example.com" } });
    expect(sweepPlan(loadConfig({}).env, true)).toEqual({ on: false, scope: undefined, whyOff: "no_sweep" });
    expect(sweepPlan(loadConfig({ ...scoped, RECONCILE_SWEEP_INTERVAL_SECONDS: "0" }).env, true)).toMatchObject({ on: false, whyOff: "sweep_off" });
  });
});
