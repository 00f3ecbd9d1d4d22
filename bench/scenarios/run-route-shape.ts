import { median, round } from "../lib/percentile.js";
import { runPipeline, type PipelineContext, type PipelineResults } from "./run-pipeline.js";

/**
 * The route's filter and transform: every bench event passes the filter (so both runs
 * deliver every event and the sink's drain compares like with like), and the transform
 * keeps `data.context` (the send time the sink reads for the latency).
 */
export const shapedRoute = {
  filter: { $and: [{ "data.object.identities.provider": { $in: ["auth0", "google-oauth2"] } }, { a0purpose: { $ne: "test" } }, { type: { $regex: "^user\\." } }] },
  testEvents: "drop",
  transform: '{"email": data.object.email, "externalId": data.object.user_id, "updatedAt": data.object.updated_at, "data": {"context": data.context}}',
};

export interface RouteShapeRound {
  round: number;
  plain: PipelineResults;
  shaped: PipelineResults;
}

export interface RouteShapeResults {
  rounds: RouteShapeRound[];
  /** the service process's CPU µs per delivered event in the as-fast-as-it-goes run, per round */
  cpuUsPerEvent: { plain: number[]; shaped: number[] };
  /** shaped ÷ plain of the medians (the target: ≤ 1.10) */
  ratio?: number;
}

/**
 * The cost of a route that chooses and shapes (docs/routes.md): the pipeline scenario
 * (run-pipeline.ts, one `--role all` process) with the same route plain and with a
 * filter, `testEvents: drop` and a transform, alternating in one run (plain, shaped,
 * plain, shaped, ...) so that a machine's drift falls on both alike. Judged by the service's
 * CPU per delivered event, which is what a filter and a transform add to.
 */
export async function runRouteShape(context: PipelineContext, rounds: number): Promise<RouteShapeResults> {
  const results: RouteShapeResults = { rounds: [], cpuUsPerEvent: { plain: [], shaped: [] } };
  for (let index = 1; index <= rounds; index++) {
    context.log(`route shape, round ${index}: the plain route`);
    const plain = await runPipeline(context, "all", {}, {});
    context.log(`route shape, round ${index}: the same route filtered and transformed`);
    const shaped = await runPipeline(context, "all", {}, shapedRoute);
    results.rounds.push({ round: index, plain, shaped });
    if (plain.status === "measured" && shaped.status === "measured") {
      results.cpuUsPerEvent.plain.push(plain.throughput.costPerEvent.service?.cpuUs ?? Number.NaN);
      results.cpuUsPerEvent.shaped.push(shaped.throughput.costPerEvent.service?.cpuUs ?? Number.NaN);
    }
  }
  const { plain, shaped } = results.cpuUsPerEvent;
  if (plain.length > 0 && [...plain, ...shaped].every(Number.isFinite)) results.ratio = round(median(shaped) / median(plain), 3);
  return results;
}
