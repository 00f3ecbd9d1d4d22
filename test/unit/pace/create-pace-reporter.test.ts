import { describe, expect, it } from "vitest";
import { registry } from "../../../src/metrics/registry.js";
import type { PaceStep } from "../../../src/pace/create-call-pacer.js";
import { createPaceReporter } from "../../../src/pace/create-pace-reporter.js";
import type { PaceEvidence, PaceLimit, PaceVerdict } from "../../../src/pace/read-pace-evidence.js";
import { capturedLogger } from "../../helpers/captured-logger.js";

const evidence = (verdict: PaceVerdict, ceiling: number, limit: PaceLimit = "bucket", reason = "the tenant shows room"): PaceEvidence => ({ verdict, ceiling: { perSecond: ceiling, limit }, reason, holdMs: 0 });
const step = (perSecond: number, kind: PaceStep["step"]): PaceStep => ({ perSecond, step: kind });

async function paceMetric(): Promise<string[]> {
  const text = await registry.getSingleMetricAsString("streamkeeper_mgmt_api_pace_per_second");
  return text.split("\n").filter((line) => line.startsWith("streamkeeper_mgmt_api_pace_per_second{"));
}

describe("createPaceReporter", () => {
  it("when the pace grows call after call, then one line names the binding limit and one says it reached the ceiling, not one per call", async () => {
    const { logger, lines } = capturedLogger();
    const reporter = createPaceReporter(logger);
    for (let pace = 5; pace < 50; pace += 5) reporter.onPace(step(pace, "grew"), evidence("room", 50));
    for (let call = 0; call < 20; call++) reporter.onPace(step(50, "held"), evidence("room", 50));
    expect(lines.map((line) => line.msg)).toEqual([
      "pacing tenant calls by our share of the tenant's bucket (RECONCILE_RATE_SHARE of X-RateLimit-Limit a second, or its refill when slower)",
      "the pace of tenant calls reached its ceiling",
    ]);
    expect(await paceMetric()).toEqual(['streamkeeper_mgmt_api_pace_per_second{limit="bucket"} 50']);
  });

  it("when a slow bucket's refill, read anew from each answer, moves the ceiling a little between answers, then its reaching is said once", () => {
    const { logger, lines } = capturedLogger();
    const reporter = createPaceReporter(logger);
    // Answers that show the refill (about 10/s) alternate with ones that show only the share of the size (30/s).
    for (let turn = 0; turn < 10; turn++) {
      const refill = 9 + (turn % 3) * 0.5;
      reporter.onPace(step(refill, "held"), evidence("room", refill));
      reporter.onPace(step(refill + 2, "grew"), evidence("room", 30));
    }
    expect(lines.filter((line) => line.msg === "the pace of tenant calls reached its ceiling")).toHaveLength(1);
  });

  it("when a 429 cuts the pace and room comes back, then a warning with the reason, one line when it grows again, and the metric follows the binding limit", async () => {
    const { logger, lines } = capturedLogger();
    const reporter = createPaceReporter(logger);
    reporter.onPace(step(40, "held"), evidence("room", 40, "quota"));
    reporter.onPace(step(20, "cut"), evidence("refused", 40, "quota", "the tenant answered 429: our client's quota is spent"));
    reporter.onPace(step(20, "held"), evidence("refused", 40, "quota", "the tenant answered 429: our client's quota is spent"));
    for (let pace = 22; pace <= 40; pace += 2) reporter.onPace(step(pace, "grew"), evidence("room", 40, "quota"));
    const cut = lines.find((line) => line.level === 40);
    expect(cut).toMatchObject({ msg: "cutting the pace of tenant calls: the tenant answered 429: our client's quota is spent", limit: "quota", pacePerSecond: 20 });
    expect(lines.map((line) => line.msg)).toEqual([
      "pacing tenant calls by our client's quota (Auth0-RateLimit)",
      "the pace of tenant calls reached its ceiling",
      "cutting the pace of tenant calls: the tenant answered 429: our client's quota is spent",
      "the tenant shows room again; growing the pace of tenant calls",
      "the pace of tenant calls reached its ceiling",
    ]);
    expect(await paceMetric()).toEqual(['streamkeeper_mgmt_api_pace_per_second{limit="quota"} 40']);
    const cuts = await registry.getSingleMetricAsString("streamkeeper_mgmt_api_pace_cuts_total");
    expect(cuts).toMatch(/^streamkeeper_mgmt_api_pace_cuts_total\{reason="rate_limited"\} 1$/m);
  });
});
