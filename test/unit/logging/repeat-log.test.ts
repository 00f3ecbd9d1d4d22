import { describe, expect, it } from "vitest";
import { createRepeatLog } from "../../../src/logging/repeat-log.js";
import { capturedLogger } from "../../helpers/captured-logger.js";
import { until } from "../../helpers/until.js";


describe("repeat log", () => {
  it("when an error repeats, then the first is logged at once with its stack, the rest as one line with their count", async () => {
    const { logger, lines } = capturedLogger();
    const log = createRepeatLog(logger, "error", "webhook not stored", 200);
    for (let i = 1; i <= 50; i++) log({ err: new Error(`Redis down #${i}`), path: "/webhooks" });
    await until("the first line", () => lines.length >= 1, { withinMs: 10_000, everyMs: 10 });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ msg: "webhook not stored", err: { message: "Redis down #1" } });
    expect((lines[0]!.err as { stack: string }).stack).toContain("Error: Redis down #1");

    await until("the summary line", () => lines.length >= 2, { withinMs: 10_000, everyMs: 10 });
    expect(lines[1]).toMatchObject({ occurrences: 49, error: "Redis down #50", path: "/webhooks" });
    expect(lines[1]).not.toHaveProperty("err");
    expect(lines[1]!.msg).toContain("49 more");
  });

  it("when a quiet interval passes, then the next occurrence is logged at once again, and kinds are counted apart", async () => {
    const { logger, lines } = capturedLogger();
    const log = createRepeatLog(logger, "warn", "webhook refused", 50);
    log({ reason: "wrong" }, "wrong");
    log({ reason: "missing" }, "missing");
    expect(lines.map((line) => line.reason)).toEqual(["wrong", "missing"]);
    // Once an interval passes with nothing, an occurrence is logged at once again (no
    // summary of zero occurrences in between). Polled less often than the interval.
    await until(
      "an occurrence logged at once again",
      () => {
        const before = lines.length;
        log({ reason: "wrong" }, "wrong");
        return lines.length > before;
      },
      { withinMs: 10_000, everyMs: 150 },
    );
    expect(lines.at(-1)).toMatchObject({ reason: "wrong", msg: "webhook refused" });
    expect(lines.filter((line) => line.occurrences === 0)).toEqual([]);
  });
});
