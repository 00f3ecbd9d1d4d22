import { describe, expect, it } from "vitest";
import { createRateLimiter } from "../../../src/emulator/rate-limiter.js";
import { createRefillEstimate } from "../../../src/reconcile/create-refill-estimate.js";
import { holdAfter } from "../../../src/reconcile/paced-fetch.js";
import { readRateLimit } from "../../../src/tenant/rate-limit-state.js";

const start = Date.parse("2025-09-08T06:35:17.250Z");

/** A tenant's token bucket of `size` that refills `perSecond`, answering as real-world.md says (Reset: UNIX seconds when full). */
function tenantBucket(size: number, perSecond: number) {
  let tokens = size;
  let at = start;
  return (now: number) => {
    tokens = Math.min(size, tokens + ((now - at) / 1000) * perSecond);
    at = now;
    const allowed = tokens >= 1;
    if (allowed) tokens -= 1;
    const reset = Math.ceil((now + ((size - tokens) / perSecond) * 1000) / 1000);
    return { allowed, headers: { "X-RateLimit-Limit": String(size), "X-RateLimit-Remaining": String(Math.floor(tokens)), "X-RateLimit-Reset": String(reset) } };
  };
}

/**
 * One client calling as paced-fetch.ts does, on a simulated clock: each call waits the pace
 * (share of the estimated refill) and any hold, then reads the answer's headers.
 * Returns the pace after `calls` calls, the fewest tokens ever left and the 429s.
 */
function paceAgainst(take: (now: number) => { allowed: boolean; headers: Record<string, string> }, share: number, calls: number) {
  const refill = createRefillEstimate();
  let now = start;
  let pace = 5;
  let fewestLeft = Infinity;
  let refused = 0;
  for (let call = 0; call < calls; call++) {
    now += 1000 / pace;
    const answer = take(now);
    if (!answer.allowed) refused++;
    const headers = new Headers(answer.headers);
    fewestLeft = Math.min(fewestLeft, Number(headers.get("x-ratelimit-remaining")));
    pace = share * refill.note(readRateLimit(headers), now)!;
    now += holdAfter({ status: answer.allowed ? 200 : 429, headers }, now, share, refill.perSecond());
  }
  return { pace, fewestLeft, refused };
}

describe("createRefillEstimate", () => {
  it("when the tenant's bucket of 100 refills at 10/s, then with share 0.5 the pace settles at about 5/s, not 50/s, and the others keep their half", () => {
    const { pace, fewestLeft, refused } = paceAgainst(tenantBucket(100, 10), 0.5, 2000);
    expect(pace).toBeGreaterThanOrEqual(4);
    expect(pace).toBeLessThanOrEqual(6);
    expect(fewestLeft).toBeGreaterThanOrEqual(50);
    expect(refused).toBe(0);
  });

  it("when a bucket of 10 refills at 1/s, then with share 0.5 the pace settles at about 0.5/s", () => {
    const { pace, refused } = paceAgainst(tenantBucket(10, 1), 0.5, 500);
    expect(pace).toBeGreaterThanOrEqual(0.4);
    expect(pace).toBeLessThanOrEqual(0.6);
    expect(refused).toBe(0);
  });

  it("when the tenant is the emulator (a bucket of N refilled N per second), then the pace reaches share of N, as before", () => {
    const limiter = createRateLimiter(20);
    expect(paceAgainst((now) => limiter.take("client", now), 0.5, 500)).toEqual({ pace: 10, fewestLeft: 19, refused: 0 });
    const whole = createRateLimiter(50);
    expect(paceAgainst((now) => whole.take("client", now), 1, 500).pace).toBe(50);
  });

  it("when no answer has shown a rate, then the guess starts low and never exceeds the bucket size per second", () => {
    const refill = createRefillEstimate({ startPerSecond: 5 });
    expect(refill.perSecond()).toBe(5);
    expect(refill.note({ limit: 100, remaining: 99, reset: Math.ceil(start / 1000) + 1 }, start)).toBe(5);
    expect(refill.note({ limit: 100, remaining: 99, reset: Math.ceil(start / 1000) + 61 }, start + 60_000)).toBe(100);
    expect(refill.note(undefined, start)).toBeUndefined();
  });
});
