import { describe, expect, it } from "vitest";
import { isStackOverflow, stringifyDeep } from "../../../src/events/stringify-deep.js";

describe("stringifyDeep", () => {
  it("when given JSON values of every kind, then it writes what JSON.stringify writes", () => {
    const values: unknown[] = [1, -0.5, "a\"\\\u2028\ud800", null, true, [], {}, [1, [2, {}], undefined, NaN], { a: undefined, b: 1, c: { d: [null, "x"] }, e: Infinity }, { x: undefined }, [{ a: undefined }], { 'k"': false, "": [] }];
    for (const value of values) expect(stringifyDeep(value)).toBe(JSON.stringify(value));
  });

  it("when a value nests 100,000 deep, then it is written without overflowing the stack, as JSON.parse read it", () => {
    const text = `${'{"a":['.repeat(100_000)}1${"]}".repeat(100_000)}`;
    const value: unknown = JSON.parse(text);
    let overflow: unknown;
    try {
      JSON.stringify(value);
    } catch (error) {
      overflow = error;
    }
    expect(isStackOverflow(overflow)).toBe(true);
    expect(stringifyDeep(value)).toBe(text);
  });
});
