import { describe, expect, it } from "vitest";
import { readPaceEvidence } from "../../../src/pace/read-pace-evidence.js";

const now = Date.parse("2025-09-08T06:35:17.000Z");
const second = now / 1000;
const answer = (status: number, headers: Record<string, string>) => ({ status, headers: new Headers(headers) });
const bucket = (limit: number, remaining: number, reset: number) => ({ "X-RateLimit-Limit": String(limit), "X-RateLimit-Remaining": String(remaining), "X-RateLimit-Reset": String(reset) });
const read = (status: number, headers: Record<string, string>, options: { share?: number; capPerSecond?: number; pacePerSecond?: number } = {}) =>
  readPaceEvidence(answer(status, headers), { share: options.share ?? 0.5, capPerSecond: options.capPerSecond, pacePerSecond: options.pacePerSecond ?? 10, now });

describe("readPaceEvidence", () => {
  it("when the bucket is full, then there is room and the ceiling is the share of its size a second", () => {
    expect(read(200, bucket(200, 199, second + 1))).toEqual({ ceiling: { perSecond: 100, limit: "bucket" }, verdict: "room", reason: "the tenant shows room", holdMs: 0 });
  });

  it("when a quota or the cap is tighter than the share, then it is the ceiling", () => {
    const quota = { ...bucket(200, 199, second + 1), "Auth0-RateLimit": "client;q=40;t=1;r=39" };
    expect(read(200, quota).ceiling).toEqual({ perSecond: 38, limit: "quota" });
    expect(read(200, quota, { capPerSecond: 20 }).ceiling).toEqual({ perSecond: 20, limit: "cap" });
    expect(read(200, { ...bucket(200, 199, second + 1), "Auth0-RateLimit": "client;q=600;t=60;r=1" }).ceiling).toEqual({ perSecond: 9.5, limit: "quota" });
  });

  it("when the bucket is full again 3 s or more from now by the tenant's clock, then the ceiling is at most the share of what it allows a second until then", () => {
    const at = (tenantSecond: number) => ({ Date: new Date(tenantSecond * 1000).toUTCString() });
    // 60 held, 30 lacking, full in 3 s: it refills at least 10 a second, not the 60 its size suggests; our share of that.
    expect(read(200, { ...bucket(60, 30, second + 3), ...at(second) }).ceiling).toEqual({ perSecond: 5, limit: "bucket" });
    // A window of 1000 a minute, one used, 59 s left: what it holds over that time, not what it lacks.
    expect(read(200, { ...bucket(1000, 999, second + 59), ...at(second) }).ceiling?.perSecond).toBeCloseTo((0.5 * 999) / 59);
    // Full within a second: the share of its size stands (the headers' whole seconds say nothing of its rate).
    expect(read(200, { ...bucket(60, 30, second + 2), ...at(second) }).ceiling).toEqual({ perSecond: 30, limit: "bucket" });
    // By the tenant's clock, not ours: ours 3 s behind reads the same bucket as full within a second.
    expect(read(200, { ...bucket(60, 58, second + 4), ...at(second + 3) }).ceiling).toEqual({ perSecond: 30, limit: "bucket" });
    // No Date header: no clock to read it by.
    expect(read(200, bucket(60, 30, second + 5)).ceiling).toEqual({ perSecond: 30, limit: "bucket" });
  });

  it("when a window that refills at its end runs low with little time left, then there is still room", () => {
    // 0.1 s before the window's end, 100 of 200 left, our pace 100/s: 10 more calls fit.
    expect(read(200, bucket(200, 100, second + 1), { pacePerSecond: 100 }).verdict).toBe("room");
    expect(readPaceEvidence(answer(200, bucket(200, 95, second + 1)), { share: 0.5, pacePerSecond: 100, now: now + 900 }).verdict).toBe("room");
  });

  it("when the bucket holds less than the others' part and less than our pace spends until it refills, then room is short", () => {
    const evidence = read(200, bucket(200, 60, second + 1), { pacePerSecond: 100 });
    expect(evidence.verdict).toBe("short");
    expect(evidence.holdMs).toBe(0);
    expect(evidence.reason).toBe("the tenant's bucket is draining: 60 of 200 left");
    // Above the others' part: ours to spend.
    expect(read(200, bucket(200, 120, second + 2), { pacePerSecond: 100 }).verdict).toBe("room");
  });

  it("when the bucket is empty, then calls hold until X-RateLimit-Reset (UNIX seconds)", () => {
    expect(read(200, bucket(50, 0, second + 2))).toMatchObject({ verdict: "short", holdMs: 2000 });
  });

  it("when our quota is spent, then calls hold for the time one request of it takes", () => {
    expect(read(200, { ...bucket(200, 150, second + 1), "Auth0-RateLimit": "client;q=10;t=1;r=0" })).toMatchObject({ verdict: "short", holdMs: 100, reason: "our client's quota is spent" });
  });

  it("when the tenant answers 429, then Retry-After wins over the reset time, and a 429 without hints holds a second", () => {
    expect(read(429, { "Retry-After": "3", "X-RateLimit-Reset": String(second + 9) })).toMatchObject({ verdict: "refused", holdMs: 3000 });
    expect(read(429, { "X-RateLimit-Reset": String(second + 9) }).holdMs).toBe(9000);
    expect(read(429, {}).holdMs).toBe(1000);
    expect(read(429, { "Retry-After": "1", "Auth0-RateLimit": "client;q=10;t=1;r=0" }).reason).toBe("the tenant answered 429: our client's quota is spent");
  });

  it("when no limit is shown, then there is no evidence; with a cap, the cap is the ceiling to grow to", () => {
    expect(read(200, {})).toEqual({ ceiling: undefined, verdict: "none", reason: "the tenant shows no rate limit", holdMs: 0 });
    expect(read(200, {}, { capPerSecond: 7 })).toMatchObject({ ceiling: { perSecond: 7, limit: "cap" }, verdict: "room" });
  });
});
