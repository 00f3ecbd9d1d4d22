import { describe, expect, it } from "vitest";
import { backoffDelay, decide } from "../../../src/dispatch/retry-policy.js";
import { parseRetryAfter } from "../../../src/time/retry-after.js";

describe("decide", () => {
  it.each([200, 201, 202, 204, 299])("when the downstream answers %i, then the event is delivered", (status) => {
    expect(decide({ status })).toEqual({ action: "delivered" });
  });

  it.each([408, 429, 500, 502, 503, 504, 599])("when the downstream answers %i, then the attempt is retried", (status) => {
    expect(decide({ status, detail: "busy" })).toEqual({ action: "retry", reason: `downstream answered ${status}: busy`, retryAfterMs: undefined });
  });

  it.each([400, 401, 403, 404, 409, 410, 413, 422])("when the downstream answers %i, then the event fails at once", (status) => {
    expect(decide({ status })).toMatchObject({ action: "fail", reason: `downstream answered ${status}` });
  });

  it.each([300, 301, 308])("when the downstream redirects (%i), then the event fails and the reason says to fix the url", (status) => {
    expect(decide({ status })).toEqual({ action: "fail", reason: `downstream answered ${status}; point the route's url at the final address` });
  });

  it.each([100, 199])("when the downstream answers %i (informational, no 2xx), then the event is not taken as delivered: it fails", (status) => {
    expect(decide({ status })).toEqual({ action: "fail", reason: `downstream answered ${status}; point the route's url at the final address` });
  });

  it("when the request could not even be sent as it is (permanent), then the event fails at once with that reason", () => {
    expect(decide({ error: "the route's header X-Key has a line break", permanent: true })).toEqual({ action: "fail", reason: "the route's header X-Key has a line break" });
  });

  it("when no answer came (network error, timeout), then the attempt is retried", () => {
    expect(decide({ error: "POST http://x/ failed: ECONNREFUSED" })).toEqual({ action: "retry", reason: "POST http://x/ failed: ECONNREFUSED" });
  });

  it("when a 429 or 503 carries Retry-After, then the retry carries its delay", () => {
    expect(decide({ status: 429, retryAfter: "3" })).toMatchObject({ action: "retry", retryAfterMs: 3000 });
    expect(decide({ status: 503, retryAfter: "Thu, 01 Jan 2026 00:00:10 GMT" }, Date.UTC(2026, 0, 1))).toMatchObject({ retryAfterMs: 10_000 });
  });
});

describe("parseRetryAfter", () => {
  const now = Date.UTC(2026, 0, 1, 12, 0, 0);

  it("when given delay-seconds, then it is milliseconds", () => {
    expect(parseRetryAfter("0", now)).toBe(0);
    expect(parseRetryAfter(" 120 ", now)).toBe(120_000);
  });

  it("when given an HTTP date, then it is the time until then, never negative", () => {
    expect(parseRetryAfter("Thu, 01 Jan 2026 12:00:05 GMT", now)).toBe(5000);
    expect(parseRetryAfter("Thu, 01 Jan 2026 11:00:00 GMT", now)).toBe(0);
  });

  it("when absent or unreadable, then it is undefined", () => {
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter("soon", now)).toBeUndefined();
    expect(parseRetryAfter("-5", now)).toBeUndefined();
    expect(parseRetryAfter("1.5", now)).toBeUndefined();
  });
});

describe("backoffDelay", () => {
  const backoff = { baseMs: 1000, maxMs: 60_000 };

  it("when attempts fail, then the ceiling doubles from the base", () => {
    expect([1, 2, 3, 4].map((attempts) => backoffDelay(attempts, backoff, undefined, 0.999999))).toEqual([1000, 2000, 4000, 8000]);
  });

  it("when jitter is applied, then the delay lies between half and all of the ceiling", () => {
    for (let attempts = 1; attempts <= 12; attempts++) {
      const ceiling = Math.min(60_000, 1000 * 2 ** (attempts - 1));
      for (const random of [0, 0.25, 0.5, 0.75, 0.999999]) {
        const delay = backoffDelay(attempts, backoff, undefined, random);
        expect(delay).toBeGreaterThanOrEqual(ceiling / 2);
        expect(delay).toBeLessThanOrEqual(ceiling);
      }
    }
    expect(backoffDelay(3, backoff, undefined, 0)).toBe(2000);
  });

  it("when many attempts failed, then the delay never exceeds the maximum", () => {
    expect(backoffDelay(40, backoff, undefined, 0.999999)).toBe(60_000);
  });

  it("when the downstream sent Retry-After, then it wins, clamped to the maximum", () => {
    expect(backoffDelay(1, backoff, 5000, 0)).toBe(5000);
    expect(backoffDelay(1, backoff, 0, 0.5)).toBe(0);
    expect(backoffDelay(1, backoff, 3_600_000, 0.5)).toBe(60_000);
  });
});
