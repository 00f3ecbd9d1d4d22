import { describe, expect, it } from "vitest";
import { rememberAnswer } from "../../../src/http/remember-answer.js";

describe("rememberAnswer", () => {
  it("when asked again within maxAgeMs, then the check is not run again; after it, it is", async () => {
    let clock = 0;
    let runs = 0;
    const check = rememberAnswer(async () => ++runs, 1000, () => clock);
    expect(await Promise.all([check(), check(), check()])).toEqual([1, 1, 1]);
    clock = 999;
    expect(await check()).toBe(1);
    clock = 1000;
    expect(await check()).toBe(2);
    expect(runs).toBe(2);
  });

  it("when the check throws, then the next call runs it again", async () => {
    let runs = 0;
    const check = rememberAnswer(async () => {
      runs++;
      if (runs === 1) throw new Error("down");
      return runs;
    }, 1000, () => 0);
    await expect(check()).rejects.toThrow("down");
    expect(await check()).toBe(2);
  });
});
