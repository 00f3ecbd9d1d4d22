import { describe, expect, it } from "vitest";
import { floorRatios } from "../../../bench/lib/floor-ratios.js";
import type { BenchResults } from "../../../bench/run.js";

type Pipeline = BenchResults["pipelines"][number];

/** A measured pipeline run with the figures floorRatios reads. */
function run(topology: "all" | "split" | "floor", round: number, eventsPerSecond: number, costs: Record<string, number>, lost = { throughput: 0, fixedRate: 0 }): Pipeline {
  const costPerEvent = Object.fromEntries(Object.entries(costs).map(([name, cpuUs]) => [name, { cpuUs, syscalls: 2 }]));
  const throughput = { eventsPerSecond, lost: lost.throughput, costPerEvent };
  return { status: "measured", topology, round, throughput, fixedRate: { lost: lost.fixedRate } } as unknown as Pipeline;
}

function results(pipelines: Pipeline[], extra: Partial<BenchResults> = {}): BenchResults {
  return { pipelines, targets: { pipeline: {} }, ...extra } as unknown as BenchResults;
}

describe("floorRatios", () => {
  it("when rounds alternate, then each run is divided by the floor run of its own round and judged on the median", () => {
    const ratios = floorRatios(
      results([
        run("split", 1, 900, { receiver: 400, worker: 300, redis: 240 }),
        run("floor", 1, 1000, { receiver: 300, worker: 200, redis: 200 }),
        run("split", 2, 1800, { receiver: 400, worker: 220, redis: 230 }),
        run("floor", 2, 2000, { receiver: 300, worker: 200, redis: 200 }),
        run("split", 3, 600, { receiver: 400, worker: 260, redis: 250 }),
        run("floor", 3, 1000, { receiver: 300, worker: 200, redis: 200 }),
      ]),
    );
    const split = ratios.find((ratio) => ratio.figure.startsWith("split pipeline"))!;
    // Paired by round: 900/1000, 1800/2000, 600/1000, not by position in the list.
    expect(split.perRound).toEqual([0.9, 0.9, 0.6]);
    expect(split).toMatchObject({ median: 0.9, met: true, target: "≥ 0.85 ×, nothing lost" });
    const redis = ratios.find((ratio) => ratio.figure.startsWith("Redis"))!;
    expect(redis).toMatchObject({ perRound: [1.2, 1.15, 1.25], median: 1.2, met: true, target: "≤ 1.2 ×" });
    const worker = ratios.find((ratio) => ratio.figure.startsWith("worker CPU per delivery, split"))!;
    expect(worker).toMatchObject({ perRound: [1.5, 1.1, 1.3], median: 1.3, met: false });
    // No all-in-one run, no ingest, no drain: nothing said about them.
    expect(ratios.map((ratio) => ratio.figure.split(" ")[0])).toEqual(["split", "Redis", "worker"]);
  });

  it("when any round lost an event, at full speed or paced, then the pipeline target is missed whatever the ratios", () => {
    const floor = (round: number) => run("floor", round, 1000, { receiver: 300, worker: 200, redis: 200 });
    const lostPaced = floorRatios(results([run("all", 1, 1000, { service: 500, redis: 200 }), floor(1), run("all", 2, 1000, { service: 500, redis: 200 }, { throughput: 0, fixedRate: 1 }), floor(2)]));
    expect(lostPaced).toEqual([{ figure: "all-in-one pipeline events/s ÷ the floor pipeline's", perRound: [1, 1], median: 1, target: "≥ 0.85 ×, nothing lost", met: false }]);
    // A run with no floor in its round is not divided, but what it lost still counts.
    const lostAlone = floorRatios(results([run("split", 1, 1000, { worker: 1, redis: 1 }), floor(1), run("split", 2, 1000, { worker: 1, redis: 1 }, { throughput: 2, fixedRate: 0 })]));
    expect(lostAlone[0]).toMatchObject({ perRound: [1], met: false });
    const nothingLost = floorRatios(results([run("split", 1, 1000, { worker: 1, redis: 1 }), floor(1)]));
    expect(nothingLost[0]).toMatchObject({ perRound: [1], met: true });
  });

  it("when a floor run measured no time, then its round is left out, not divided by zero", () => {
    const ratios = floorRatios(results([run("split", 1, 900, { worker: 200, redis: 200 }), run("floor", 1, 0, { worker: 0, redis: 0 }), run("split", 2, 900, { worker: 200, redis: 200 }), run("floor", 2, 1000, { worker: 200, redis: 200 })]));
    expect(ratios.map((ratio) => ratio.perRound)).toEqual([[0.9], [1], [1]]);
  });

  it("when a round has no floor run, then its runs are left out rather than divided by another round's floor", () => {
    const ratios = floorRatios(results([run("split", 1, 500, { worker: 100, redis: 100 }), run("split", 2, 900, { worker: 100, redis: 100 }), run("floor", 2, 1000, { worker: 100, redis: 100 })]));
    expect(ratios[0]!.perRound).toEqual([0.9]);
  });

  it("when the ingest and the worker drain ran, then they are judged against their own floors", () => {
    const drain = { events: 1000, runs: { service: { costPerEvent: { worker: { cpuUs: 345, syscalls: 3 } } }, floorPost: { costPerEvent: { worker: { cpuUs: 300, syscalls: 3 } } }, floorNoop: { costPerEvent: {} } } };
    const ratios = floorRatios(results([], { workerDrain: drain, ingest: { ratioToFloor: 0.91, single: { errors: 0 } } } as unknown as Partial<BenchResults>));
    expect(ratios).toEqual([
      { figure: "worker CPU per delivery draining alone ÷ floor worker's", perRound: [1.15], median: 1.15, target: "≤ 1.15 ×", met: true },
      { figure: "ingest req/s ÷ the floor's (full auth, validation, dedupe, store)", perRound: [0.91], median: 0.91, target: "≥ 0.9 ×, 0 errors", met: true },
    ]);
    const withErrors = floorRatios(results([], { ingest: { ratioToFloor: 0.95, single: { errors: 3 } } } as unknown as Partial<BenchResults>));
    expect(withErrors[0]!.met).toBe(false);
  });
});

