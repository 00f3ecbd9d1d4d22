import { describe, expect, it } from "vitest";
import { median } from "../../../bench/lib/percentile.js";

describe("median", () => {
  it("when the count is odd, then it is the middle value; when even, the mean of the two middle ones", () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([0.44, 0.69])).toBeCloseTo(0.565);
  });

  it("when there is nothing to take the median of, or a value is not a finite number, then it says so instead of answering", () => {
    expect(() => median([])).toThrow("the median of no values");
    expect(() => median([1, Number.POSITIVE_INFINITY])).toThrow("not all finite numbers: 1, Infinity");
    expect(() => median([Number.NaN])).toThrow("not all finite numbers");
  });
});
