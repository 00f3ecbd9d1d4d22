import { describe, expect, it } from "vitest";
import { backoffMs, defaultRetryPolicy, retryDecision } from "../../../src/tenant/retry-decision.js";

const now = Date.parse("2025-09-08T06:35:00.000Z");
const base = { retries: 0, now, random: 0.5 };

describe("retryDecision", () => {
  it("when the tenant answers 429 with Retry-After, then it waits that many seconds", () => {
    expect(retryDecision({ ...base, status: 429, headers: new Headers({ "retry-after": "2" }) })).toEqual({ retry: true, delayMs: 2000 });
  });

  it("when the tenant answers 429 with only X-RateLimit-Reset, then it waits until that UNIX second", () => {
    const headers = new Headers({ "x-ratelimit-reset": String(now / 1000 + 3), "x-ratelimit-remaining": "0" });
    expect(retryDecision({ ...base, status: 429, headers })).toEqual({ retry: true, delayMs: 3000 });
  });

  it("when the reset lies in the past or is this second (our clock ahead of the tenant's), then it waits a second, not retrying into the same refusal", () => {
    for (const reset of [now / 1000 - 5, now / 1000]) {
      const headers = new Headers({ "x-ratelimit-reset": String(reset) });
      expect(retryDecision({ ...base, status: 429, headers })).toEqual({ retry: true, delayMs: 1000 });
    }
  });

  it("when the server asks for an hour, then the wait is clamped", () => {
    const headers = new Headers({ "retry-after": "3600" });
    expect(retryDecision({ ...base, status: 429, headers })).toEqual({ retry: true, delayMs: defaultRetryPolicy.maxServerWaitMs });
  });

  it("when 429 has no hint, then it backs off", () => {
    expect(retryDecision({ ...base, status: 429, headers: new Headers() })).toEqual({ retry: true, delayMs: backoffMs(0, 0.5) });
  });

  it("when the answer is 5xx or none came, then it retries with backoff; a 5xx Retry-After is honoured", () => {
    expect(retryDecision({ ...base, status: 503 })).toEqual({ retry: true, delayMs: backoffMs(0, 0.5) });
    expect(retryDecision({ ...base, status: undefined })).toEqual({ retry: true, delayMs: backoffMs(0, 0.5) });
    expect(retryDecision({ ...base, status: 503, headers: new Headers({ "retry-after": "1" }) })).toEqual({ retry: true, delayMs: 1000 });
  });

  it("when a 5xx carries only X-RateLimit-Reset, then the reset is not a reason to wait", () => {
    const headers = new Headers({ "x-ratelimit-reset": String(now / 1000 + 30) });
    expect(retryDecision({ ...base, status: 500, headers })).toEqual({ retry: true, delayMs: backoffMs(0, 0.5) });
  });

  it("when the status is another 4xx, then it never retries", () => {
    for (const status of [400, 401, 403, 404, 409, 422]) expect(retryDecision({ ...base, status })).toEqual({ retry: false });
  });

  it("when the retries are spent, then it stops", () => {
    expect(retryDecision({ ...base, retries: 3, status: 503 })).toEqual({ retry: false });
    expect(retryDecision({ ...base, retries: 1, status: 503 }, { ...defaultRetryPolicy, maxRetries: 1 })).toEqual({ retry: false });
  });
});

describe("backoffMs", () => {
  it("when retries grow, then the delay doubles within [half, full] of the ceiling and is capped", () => {
    expect(backoffMs(0, 0)).toBe(250);
    expect(backoffMs(0, 0.999)).toBeLessThanOrEqual(500);
    expect(backoffMs(2, 0)).toBe(1000);
    expect(backoffMs(10, 0.999)).toBeLessThanOrEqual(defaultRetryPolicy.maxDelayMs);
    expect(backoffMs(10, 0)).toBe(defaultRetryPolicy.maxDelayMs / 2);
  });
});
