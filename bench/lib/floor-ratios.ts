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
 * split and all-in-one pipeline run over the floor run of its round, the ingest over its
 * floor, the worker draining alone over the floor worker. A machine shared with other
 * work moves neighbouring runs alike, so a run is compared with its own round's floor
 * only, and the verdict is the median's. A figure not measured in this run is left out.
 */
export function floorRatios(results: BenchResults): FloorRatio[] {
  const measured = results.pipelines.filter((run): run is Measured => run.status === "measured");
  // A floor run that measured no time (0 events/s) divides nothing.
  const floorOf = (round: number) => measured.find((run) => run.topology === "floor" && run.round === round && run.throughput.eventsPerSecond > 0);
  const pairs = (topology: "split" | "all") =>
    measured.flatMap((run) => {
      const floor = run.topology === topology ? floorOf(run.round) : undefined;
      return floor ? [{ ours: run.throughput, floor: floor.throughput }] : [];
    });
  const ratios: FloorRatio[] = [];
  // A median within its bound is not enough where something else must hold too: nothing lost, no errors.
  const add = (figure: string, perRound: number[], bound: { atLeast: number } | { atMost: number }, also?: { holds: boolean; condition: string }) => {
    if (perRound.length === 0) return;
    const middle = median(perRound);
    const within = "atLeast" in bound ? middle >= bound.atLeast : middle <= bound.atMost;
    const target = `${"atLeast" in bound ? `≥ ${bound.atLeast}` : `≤ ${bound.atMost}`} ×${also ? `, ${also.condition}` : ""}`;
    ratios.push({ figure, perRound, median: middle, target, met: within && (also?.holds ?? true) });
  };
  for (const topology of ["split", "all"] as const) {
    // Every run of the topology counts for "nothing lost", with a floor beside it or not.
    const nothingLost = measured.filter((run) => run.topology === topology).every((run) => run.throughput.lost === 0 && run.fixedRate.lost === 0);
    const name = topology === "split" ? "split" : "all-in-one";
    const perRound = pairs(topology).map(({ ours, floor }) => ours.eventsPerSecond / floor.eventsPerSecond);
    add(`${name} pipeline events/s ÷ the floor pipeline's`, perRound, { atLeast: 0.85 }, { holds: nothingLost, condition: "nothing lost" });
  }
  // The floor's processes carry the split topology's names: receiver, worker, redis.
  const over = (process: string) =>
    pairs("split").flatMap(({ ours, floor }) => {
      const [oursUs, floorUs] = [ours.costPerEvent[process]?.cpuUs, floor.costPerEvent[process]?.cpuUs];
      return oursUs !== undefined && floorUs ? [oursUs / floorUs] : [];
    });
  add("Redis CPU per delivered event, split ÷ floor", over("redis"), { atMost: 1.2 });
  add("worker CPU per delivery, split ÷ floor worker", over("worker"), { atMost: 1.15 });
  const drain = results.workerDrain?.runs;
  const [drainService, drainFloor] = [drain?.service.costPerEvent.worker?.cpuUs, drain?.floorPost.costPerEvent.worker?.cpuUs];
  if (drainService !== undefined && drainFloor) add("worker CPU per delivery draining alone ÷ floor worker's", [drainService / drainFloor], { atMost: 1.15 });
  const ingest = results.ingest;
  if (ingest && Number.isFinite(ingest.ratioToFloor)) add("ingest req/s ÷ the floor's (full auth, validation, dedupe, store)", [ingest.ratioToFloor], { atLeast: 0.9 }, { holds: ingest.single.errors === 0, condition: "0 errors" });
  return ratios;
}
