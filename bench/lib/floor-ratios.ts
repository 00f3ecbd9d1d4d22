import type { BenchResults } from "../run.js";
import { median } from "./percentile.js";

/** One figure of ours over the floor's: each round's ratio, their median, the target and whether the median meets it. */
export interface FloorRatio {
  figure: string;
  perRound: number[];
  median: number;
  target: string;
  met: boolean;
}

type Measured = Extract<BenchResults["pipelines"][number], { status: "measured" }>;

/**
 * The targets of the pipeline at the stack's floor (docs/benchmarks.md, "Targets"): each
 * split and all-in-one pipeline run over the floor run of its round (BENCH_PIPELINE_ROUNDS
 * runs the topologies in turn, so each is compared with the floor run beside it), the
 * ingest over its floor, the worker draining alone over the floor worker. Judged on the
 * medians; a figure not measured in this run is left out.
 */
export function floorRatios(results: BenchResults): FloorRatio[] {
  const measured = results.pipelines.filter((run): run is Measured => run.status === "measured");
  const floorOf = (round: number) => measured.find((run) => run.topology === "floor" && run.round === round);
  const pairs = (topology: "split" | "all") =>
    measured.flatMap((run) => {
      const floor = run.topology === topology ? floorOf(run.round) : undefined;
      return floor ? [{ ours: run.throughput, floor: floor.throughput }] : [];
    });
  const ratios: FloorRatio[] = [];
  // A bound at least or at most, and whatever else must hold (nothing lost, no errors).
  const add = (figure: string, perRound: number[], bound: { atLeast: number } | { atMost: number }, extra?: { also: boolean; what: string }) => {
    if (perRound.length === 0) return;
    const middle = median(perRound);
    const within = "atLeast" in bound ? middle >= bound.atLeast : middle <= bound.atMost;
    const target = `${"atLeast" in bound ? `≥ ${bound.atLeast}` : `≤ ${bound.atMost}`} ×${extra ? `, ${extra.what}` : ""}`;
    ratios.push({ figure, perRound, median: middle, target, met: within && (extra?.also ?? true) });
  };
  for (const topology of ["split", "all"] as const) {
    const rounds = pairs(topology);
    const name = topology === "split" ? "split" : "all-in-one";
    add(`${name} pipeline events/s ÷ the floor pipeline's`, rounds.map(({ ours, floor }) => ours.eventsPerSecond / floor.eventsPerSecond), { atLeast: 0.85 }, { also: rounds.every(({ ours }) => ours.lost === 0), what: "nothing lost" });
  }
  const split = pairs("split");
  const cost = (run: Measured["throughput"], process: string) => run.costPerEvent[process]?.cpuUs;
  const over = (process: string, floorProcess = process) =>
    split.flatMap(({ ours, floor }) => {
      const [a, b] = [cost(ours, process), cost(floor, floorProcess)];
      return a !== undefined && b ? [a / b] : [];
    });
  add("Redis CPU per delivered event, split ÷ floor", over("redis"), { atMost: 1.2 });
  add("worker CPU per delivery, split ÷ floor worker", over("worker"), { atMost: 1.15 });
  const drain = results.workerDrain?.runs;
  const [drainService, drainFloor] = [drain?.service.costPerEvent.worker?.cpuUs, drain?.floorPost.costPerEvent.worker?.cpuUs];
  if (drainService !== undefined && drainFloor) add("worker CPU per delivery draining alone ÷ floor worker's", [drainService / drainFloor], { atMost: 1.15 });
  if (results.ingest) add("ingest req/s ÷ the floor's (full auth, validation, dedupe, store)", [results.ingest.ratioToFloor], { atLeast: 0.9 }, { also: results.ingest.single.errors === 0, what: "0 errors" });
  return ratios;
}

