import { describe, expect, it } from "vitest";
import { rateLimiter } from "../../../src/dispatch/rate-limiter.js";

describe("rateLimiter", () => {
  it.each([0.5, 1, 3, 10, 15, 99, 100, 250, 1000])("when a route allows %d per second, then the windows never allow more than that, and are at most about 100 ms long from 10 per second up", (rate) => {
    const { max, duration } = rateLimiter(rate);
    expect(max).toBeGreaterThanOrEqual(1);
    expect((max * 1000) / duration).toBeLessThanOrEqual(rate);
    // Windows of whole milliseconds lose less than a tenth of the rate.
    expect((max * 1000) / duration).toBeGreaterThan(rate * 0.9);
    if (rate >= 10) expect(duration).toBeLessThanOrEqual(101);
  });

  it("when a route has no rate, then its limiter never limits (it exists so that the circuit can hold the queue)", () => {
    expect(rateLimiter(undefined).max).toBeGreaterThan(1e6);
  });
});
