import { describe, expect, it } from "vitest";
import { loadBenchSettings } from "../../../bench/bench-settings.js";

describe("loadBenchSettings", () => {
  it("when nothing is set, then the pipeline runs all, split and floor, three rounds of them", () => {
    const settings = loadBenchSettings({});
    expect(settings.topologies).toEqual(["all", "split", "floor"]);
    expect(settings.BENCH_PIPELINE_ROUNDS).toBe(3);
  });

  it("when a topology is named twice, then it refuses, saying to set BENCH_PIPELINE_ROUNDS instead", () => {
    expect(() => loadBenchSettings({ BENCH_PIPELINE_TOPOLOGIES: "split,floor,split" })).toThrow('BENCH_PIPELINE_TOPOLOGIES "split,floor,split" names a topology twice; name each once and set BENCH_PIPELINE_ROUNDS to run them again');
  });

  it("when the rounds are not a whole number of at least one, then it refuses with the setting's meaning", () => {
    expect(() => loadBenchSettings({ BENCH_PIPELINE_ROUNDS: "0" })).toThrow(/BENCH_PIPELINE_ROUNDS "0": .*times the pipeline topologies run/);
  });
});
