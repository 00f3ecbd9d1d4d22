import { describe, expect, it } from "vitest";
import { createRateLimiter } from "../../../src/emulator/rate-limiter.js";

describe("createRateLimiter", () => {
  it("when a bucket of 2 per second is spent, then the third request is refused with Retry-After, and it refills with time", () => {
    const limiter = createRateLimiter(2);
    const t0 = 1_700_000_000_000;
    expect(limiter.take("a", t0)).toMatchObject({ allowed: true, headers: { "X-RateLimit-Limit": "2", "X-RateLimit-Remaining": "1" } });
    expect(limiter.take("a", t0)).toMatchObject({ allowed: true, headers: { "X-RateLimit-Remaining": "0" } });
    const refused = limiter.take("a", t0);
    expect(refused.allowed).toBe(false);
    expect(refused.headers["Retry-After"]).toBe("1");
    // Empty at t0: full again one second later, in UNIX seconds.
    expect(refused.headers["X-RateLimit-Reset"]).toBe(String(t0 / 1000 + 1));
    expect(limiter.take("a", t0 + 500).allowed).toBe(true);
    expect(limiter.take("a", t0 + 500).allowed).toBe(false);
  });

  it("when a bucket holds 4 but refills 1 a second, then 4 pass at once, the limit says 4, and it is full again 4 s after it emptied", () => {
    const limiter = createRateLimiter(1, "bucket", 4);
    const t0 = 1_700_000_000_000;
    for (let n = 0; n < 4; n++) expect(limiter.take("a", t0)).toMatchObject({ allowed: true, headers: { "X-RateLimit-Limit": "4" } });
    const refused = limiter.take("a", t0);
    expect(refused).toMatchObject({ allowed: false, headers: { "Retry-After": "1", "X-RateLimit-Reset": String(t0 / 1000 + 4) } });
    expect(limiter.take("a", t0 + 1000).allowed).toBe(true);
    expect(limiter.take("a", t0 + 1000).allowed).toBe(false);
  });

  it("when two buckets are used, then one spending does not touch the other", () => {
    const limiter = createRateLimiter(1);
    expect(limiter.take("a", 0).allowed).toBe(true);
    expect(limiter.take("a", 0).allowed).toBe(false);
    expect(limiter.take("b", 0).allowed).toBe(true);
  });

  it("when no limit is set, then every request passes and the headers are still there", () => {
    const limiter = createRateLimiter(undefined);
    for (let i = 0; i < 5000; i++) expect(limiter.take("a", 0).allowed).toBe(true);
    expect(Object.keys(limiter.take("a", 0).headers).sort()).toEqual(["X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"]);
  });

  it("when the limit is a window, then it refills all at once at the end of each second, and Reset is that end", () => {
    const limiter = createRateLimiter(3, "window");
    const t0 = 1_700_000_000_000;
    for (const remaining of ["2", "1", "0"]) expect(limiter.take("a", t0 + 100)).toMatchObject({ allowed: true, headers: { "X-RateLimit-Remaining": remaining, "X-RateLimit-Reset": String(t0 / 1000 + 1) } });
    // 800 ms later a bucket would have refilled 2.4; a window nothing until its end.
    const refused = limiter.take("a", t0 + 900);
    expect(refused).toMatchObject({ allowed: false, headers: { "Retry-After": "1", "X-RateLimit-Remaining": "0" } });
    expect(limiter.take("a", t0 + 1000)).toMatchObject({ allowed: true, headers: { "X-RateLimit-Remaining": "2", "X-RateLimit-Reset": String(t0 / 1000 + 2) } });
  });

  it("when a bucket is looked at, then nothing is spent", () => {
    const limiter = createRateLimiter(1);
    expect(limiter.peek("a", 0).headers["X-RateLimit-Remaining"]).toBe("1");
    expect(limiter.take("a", 0).allowed).toBe(true);
  });
});
