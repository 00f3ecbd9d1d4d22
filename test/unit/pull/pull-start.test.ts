import { describe, expect, it } from "vitest";
import { parsePullStart, startTime } from "../../../src/pull/pull-start.js";

describe("PULL_START", () => {
  const now = Date.parse("2026-11-25T12:00:00Z");

  it.each([
    ["now", undefined],
    ["7d", "2026-11-18T12:00:00.000Z"],
    ["90m", "2026-11-25T10:30:00.000Z"],
    ["2026-11-01T00:00:00Z", "2026-11-01T00:00:00.000Z"],
  ])("when it is %s, then reading begins at %s", (value, expected) => {
    const start = parsePullStart(value);
    expect(start).toBeDefined();
    expect(startTime(start!, now)?.toISOString()).toBe(expected);
  });

  it.each(["yesterday", "7 days", "-5m", "2026-13-45", ""])("when it is %j, then it is refused", (value) => {
    expect(parsePullStart(value)).toBeUndefined();
  });
});
