import { describe, expect, it } from "vitest";
import { parseCliTime } from "../../../src/cli/parse-cli-time.js";
import { parseTimeInput } from "../../../src/time/parse-time-input.js";
import { parsePullStart } from "../../../src/pull/pull-start.js";

const now = Date.parse("2026-12-07T18:00:00Z");

describe("parseTimeInput: the one reader of a time a person types", () => {
  it.each([
    ["90m", "2026-12-07T16:30:00.000Z"],
    ["2h", "2026-12-07T16:00:00.000Z"],
    [" 7d ", "2026-11-30T18:00:00.000Z"],
    ["2w", "2026-11-23T18:00:00.000Z"],
    ["2026-12-07", "2026-12-07T00:00:00.000Z"],
    ["2026-12-07T06:00:00Z", "2026-12-07T06:00:00.000Z"],
    ["2026-12-07T06:00:00.250+01:00", "2026-12-07T05:00:00.250Z"],
  ])("when given %j, then it reads %s", (value, expected) => {
    expect(new Date(parseTimeInput(value, now)!).toISOString()).toBe(expected);
  });

  it.each(["yesterday", "2h ago", "-2h", "2026-12", "12/07/2026", "2026-13-45", ""])("when given %j, then it reads no time", (value) => {
    expect(parseTimeInput(value, now)).toBeUndefined();
  });

  it("when a date alone is given, then the CLI and PULL_START take it as the same time", () => {
    expect(parseCliTime("--since", "2026-12-07", now)).toBe("2026-12-07T00:00:00.000Z");
    expect(parsePullStart("2026-12-07")).toEqual({ kind: "at", time: new Date("2026-12-07T00:00:00Z") });
    expect(() => parseCliTime("--since", "yesterday", now)).toThrow('--since "yesterday": give a duration back from now (90m, 6h, 7d), a date (2026-11-25: its midnight UTC) or a time in ISO 8601 (2026-11-25T06:35:17Z)');
  });
});
