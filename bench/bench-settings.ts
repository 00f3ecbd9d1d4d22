import { z } from "zod";

/** Every knob of `npm run bench`, read from BENCH_* variables; the defaults keep a run under ~5 minutes. */
const schema = z.object({
  BENCH_DURATION_S: z.coerce.number().positive().default(10).describe("length of each measured load run"),
  BENCH_WARMUP_S: z.coerce.number().min(0).default(2).describe("unmeasured load before each target, so the JIT is warm"),
  BENCH_CONNECTIONS: z.coerce.number().int().min(1).default(50).describe("concurrent HTTP connections of the load generator"),
  BENCH_BATCH_SIZE: z.coerce.number().int().min(2).default(20).describe("events per request in the batch run"),
  BENCH_FIXED_RATE: z.coerce.number().int().min(1).default(1000).describe("requests/s of the fixed-rate acknowledgement run"),
  BENCH_PIPELINE_RATE: z.coerce.number().int().min(1).default(1000).describe("events/s of the end-to-end latency run"),
  BENCH_DRAIN_TIMEOUT_S: z.coerce.number().positive().default(120).describe("how long the pipeline runs wait for the sink to get every stored event"),
  BENCH_ROUTE_CONCURRENCY: z.coerce.number().int().min(1).optional().describe("the route's concurrency in the pipeline runs; unset: DOWNSTREAM_URL's route with the default concurrency (10)"),
  BENCH_RECONCILE_IDS: z.coerce.number().int().min(1).default(5000).describe("failed deliveries to reconcile"),
  BENCH_RECONCILE_RATE: z.coerce.number().positive().default(100).describe("emulator rate limit and RECONCILE_RATE_PER_SECOND"),
  BENCH_PACE_IDS: z.coerce.number().int().min(1).default(1000).describe("failed deliveries recovered under each limiter shape in the reconcile-pace scenario"),
  BENCH_PACE_RATE: z.coerce.number().positive().default(100).describe("the emulator's rate limit in the reconcile-pace scenario (the service spends its default share, 0.5, of it; the quota shape 0.4 of it)"),
  BENCH_OUTAGE_S: z.coerce.number().positive().default(60).describe("how long the downstream answers 503 in the outage run"),
  BENCH_OUTAGE_RATE: z.coerce.number().positive().default(50).describe("events/s arriving during the outage run"),
  BENCH_PIPELINE_TOPOLOGIES: z.string().default("all,split,floor").describe("pipeline runs: all (one --role all process), split (a receiver and a worker process), floor (the bench's floor server and floor worker: Express + one BullMQ add, BullMQ + one POST; the stack's own bound)"),
  BENCH_PIPELINE_ROUNDS: z.coerce.number().int().min(1).default(3).describe("times the pipeline topologies run, in turn (all, split, floor, all, split, floor, ...), so each run of ours is judged against the floor run beside it"),
  BENCH_MEMORY_EVENTS: z.coerce.number().int().min(1).default(100_000).describe("events stored, delivered and their jobs removed in the memory scenario"),
  BENCH_DRAIN_EVENTS: z.coerce.number().int().min(1).default(20_000).describe("queued deliveries each worker drains in the worker-drain scenario"),
  BENCH_SOAK_RATE: z.coerce.number().int().min(1).default(1000).describe("events/s of the soak scenario, evenly paced"),
  BENCH_SOAK_WARMUP_S: z.coerce.number().min(0).default(60).describe("unmeasured load before the soak's samples, so completed-job retention and BullMQ's events stream reach their caps"),
  BENCH_SOAK_S: z.coerce.number().positive().default(300).describe("length of the soak's measured run"),
  BENCH_SOAK_SAMPLE_S: z.coerce.number().positive().default(10).describe("seconds between the soak's samples of Redis memory and service RSS"),
  BENCH_ARCHIVE_SEARCH_ROWS: z.coerce.number().int().min(1).default(1_000_000).describe("archived events loaded by SQL for the archive scenario's search by entity"),
  BENCH_ARCHIVE_ROUNDS: z.coerce.number().int().min(1).default(2).describe("rounds of the archive-pipeline scenario, each the split pipeline and the ingest with the archive off then on"),
  BENCH_ARCHIVE_REPLAY_EVENTS: z.coerce.number().int().min(1).default(5000).describe("archived events replayed to the sink in the archive-pipeline scenario"),
  BENCH_FLOOD_EVENTS: z.coerce.number().int().min(1).default(10_000).describe("day-old events stored behind the live ones in the flood scenario"),
  BENCH_FLOOD_LIVE_RATE: z.coerce.number().positive().default(20).describe("live events/s of the flood scenario, evenly paced, alone and with the flood"),
  BENCH_FLOOD_LIVE_S: z.coerce.number().positive().default(10).describe("length of each live phase of the flood scenario"),
  BENCH_ROUTE_SHAPE_ROUNDS: z.coerce.number().int().min(1).default(2).describe("times the route-shape scenario runs the pipeline with the plain route and then the filtered and transformed one, in turn"),
  BENCH_SCENARIOS: z.string().default("ingest,pipeline,worker-drain,reconcile,reconcile-pace,stale-guard,route-shape,flood,outage,memory,archive,archive-pipeline").describe("which scenarios to run, comma-separated; soak (6+ minutes) only when named"),
  BENCH_CPU_PROFILE: z.stringbool().default(false).describe("write a CPU profile of each service process into bench/results/"),
  BENCH_OUTPUT: z.string().default("latest").describe("results file name under bench/results/ (.json and .md)"),
});

/** `topologies`: one round's pipeline runs, in order; run.ts runs BENCH_PIPELINE_ROUNDS of them. */
export type BenchSettings = z.output<typeof schema> & { scenarios: Set<string>; topologies: Array<"all" | "split" | "floor"> };

export function loadBenchSettings(env: Record<string, string | undefined> = process.env): BenchSettings {
  const raw = Object.fromEntries(Object.keys(schema.shape).map((key) => [key, env[key] === "" ? undefined : env[key]]));
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const key = String(issue.path[0]);
      return `${key} ${JSON.stringify(raw[key])}: ${issue.message}; ${schema.shape[key as keyof typeof schema.shape].description ?? ""}`;
    });
    throw new Error(`bad bench setting: ${problems.join("; ")}`);
  }
  const list = (value: string) => value.split(",").map((name) => name.trim()).filter(Boolean);
  const topologies = list(parsed.data.BENCH_PIPELINE_TOPOLOGIES);
  const unknown = topologies.filter((name) => name !== "all" && name !== "split" && name !== "floor");
  if (unknown.length > 0) throw new Error(`bad bench setting: BENCH_PIPELINE_TOPOLOGIES: ${unknown.join(", ")} unknown; use all, split, floor or several`);
  // Each run of ours is compared with its round's floor run: one of each per round (BENCH_PIPELINE_ROUNDS repeats them).
  if (new Set(topologies).size < topologies.length) throw new Error(`bad bench setting: BENCH_PIPELINE_TOPOLOGIES ${JSON.stringify(parsed.data.BENCH_PIPELINE_TOPOLOGIES)} names a topology twice; name each once and set BENCH_PIPELINE_ROUNDS to run them again`);
  return { ...parsed.data, scenarios: new Set(list(parsed.data.BENCH_SCENARIOS)), topologies: topologies as Array<"all" | "split" | "floor"> };
}
