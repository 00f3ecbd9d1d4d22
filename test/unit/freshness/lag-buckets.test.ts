import { describe, expect, it } from "vitest";
import { bucketOf, bucketUpperMs, lastBucket, quantileSeconds } from "../../../src/freshness/lag-buckets.js";

describe("freshness lag buckets", () => {
  it("when a lag is counted, then its bucket's bounds hold it, 19% wide, from 1 ms to the last bucket", () => {
    for (const lagMs of [1.5, 2, 3, 10, 59, 333, 1000, 3000, 4999, 5000, 60_000, 3_600_000, 86_400_000]) {
      const bucket = bucketOf(lagMs);
      expect(bucketUpperMs(bucket)).toBeGreaterThanOrEqual(lagMs);
      expect(bucketUpperMs(bucket - 1)).toBeLessThan(lagMs);
      expect(bucketUpperMs(bucket) / bucketUpperMs(bucket - 1)).toBeCloseTo(2 ** 0.25, 6);
    }
    // At most 1 ms, and a negative lag (an event dated ahead by a skewed clock), is bucket 0.
    expect([bucketOf(1), bucketOf(0), bucketOf(-5000), bucketOf(NaN)]).toEqual([0, 0, 0, 0]);
    expect(bucketOf(10 * 86_400_000)).toBe(lastBucket);
  });

  it("when quantiles are read back from the counts, then they are within 10% of the true ones", () => {
    // 1000 lags spread from 10 ms to 10 s on a log scale.
    const lags = Array.from({ length: 1000 }, (_, index) => 10 * 1000 ** (index / 999));
    const counts = new Map<number, number>();
    for (const lag of lags) counts.set(bucketOf(lag), (counts.get(bucketOf(lag)) ?? 0) + 1);
    for (const q of [0.5, 0.9, 0.99]) {
      const truth = lags[Math.ceil(q * lags.length) - 1]! / 1000;
      const read = quantileSeconds(counts, q)!;
      expect(Math.abs(read - truth) / truth, `q=${q}: ${read} against ${truth}`).toBeLessThanOrEqual(0.1);
    }
    expect(quantileSeconds(new Map(), 0.99)).toBeUndefined();
  });

  it("when 99 fast deliveries and one slow one are counted, then p50 is the fast and p99 still the fast, p100 the slow", () => {
    const counts = new Map([[bucketOf(50), 99], [bucketOf(3000), 1]]);
    expect(quantileSeconds(counts, 0.5)!).toBeLessThan(0.06);
    expect(quantileSeconds(counts, 0.99)!).toBeLessThan(0.06);
    expect(quantileSeconds(counts, 1)!).toBeGreaterThan(2.7);
  });
});
