import { describe, expect, it } from "vitest";
import { maxAutoEnableBackoffMs, nextAutoEnableAt, streakAfterEnabledCheck } from "../../../src/streams/auto-enable-backoff.js";

const minute = 60_000;

describe("auto-enable backoff", () => {
  it("when a stream was never auto-enabled, then it may be enabled at once", () => {
    expect(nextAutoEnableAt({ enables: 0, lastEnabledAt: 0 }, minute)).toBe(0);
  });

  it("when the tenant disables it again and again, then each wait doubles, from 2 intervals up to an hour", () => {
    const at = 1_000_000;
    const waits = [1, 2, 3, 4, 5, 6, 7, 40].map((enables) => nextAutoEnableAt({ enables, lastEnabledAt: at }, minute) - at);
    expect(waits).toEqual([2, 4, 8, 16, 32, 60, 60, 60].map((minutes) => minutes * minute));
  });

  it("when a check finds it enabled an hour after the last auto-enable, then the streak ends; earlier, it goes on", () => {
    const streak = { enables: 3, lastEnabledAt: 1_000_000 };
    expect(streakAfterEnabledCheck(streak, 1_000_000 + maxAutoEnableBackoffMs - 1)).toEqual(streak);
    expect(streakAfterEnabledCheck(streak, 1_000_000 + maxAutoEnableBackoffMs)).toEqual({ enables: 0, lastEnabledAt: 0 });
  });
});
