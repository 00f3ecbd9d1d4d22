import { execSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { startRedisServer } from "../src/redis/redis-server.js";
import { loadBenchSettings, type BenchSettings } from "./bench-settings.js";
import { machineBusyCores } from "./lib/cpu-usage.js";
import { floorRatios, type FloorRatio } from "./lib/floor-ratios.js";
import { formatResults } from "./lib/format-results.js";
import { startChild, tsxArgs } from "./lib/start-child.js";
import { runIngest, type IngestResults } from "./scenarios/run-ingest.js";
import { runOutage, type OutageResults } from "./scenarios/run-outage.js";
import { runMemory, type MemoryResults } from "./scenarios/run-memory.js";
import { runPipeline, type PipelineResults, type Topology } from "./scenarios/run-pipeline.js";
import { runReconcile, type ReconcileResults } from "./scenarios/run-reconcile.js";
import { runReconcilePace, type ReconcilePaceResults } from "./scenarios/run-reconcile-pace.js";
import { runSoak, type SoakResults } from "./scenarios/run-soak.js";
import { runStaleGuard, type StaleGuardResults } from "./scenarios/run-stale-guard.js";
import { runFlood, type FloodResults } from "./scenarios/run-flood.js";
import { runArchive, type ArchiveResults } from "./scenarios/run-archive.js";
import { runArchivePipeline, type ArchivePipelineResults } from "./scenarios/run-archive-pipeline.js";
import { runWorkerDrain, type WorkerDrainResults } from "./scenarios/run-worker-drain.js";
import { runOperatorView, type OperatorViewResults } from "./scenarios/run-operator-view.js";
import { runRouteShape, type RouteShapeResults } from "./scenarios/run-route-shape.js";

export interface BenchResults {
  startedAt: string;
  finishedAt?: string;
  settings: Omit<BenchSettings, "scenarios" | "topologies">;
  machine: {
    cpus: number;
    cpuModel: string;
    node: string;
    redis: string;
    commit: string;
    /** cores busy machine-wide in the 3 s before the run, i.e. other work (≈ 0 when quiet) */
    busyCoresBefore?: number;
    loadBefore: number[];
    loadAfter: number[];
  };
  ingest?: IngestResults;
  /** one per BENCH_PIPELINE_TOPOLOGIES entry and round (BENCH_PIPELINE_ROUNDS), in the order they ran */
  pipelines: Array<PipelineResults & { round: number }>;
  /** ours over the floor's, per round and at the median (floor-ratios.ts) */
  floorRatios?: FloorRatio[];
  /** the worker alone: queued deliveries drained by the service and by two floors */
  workerDrain?: WorkerDrainResults;
  reconcile?: ReconcileResults;
  reconcilePace?: ReconcilePaceResults;
  /** the cost of a dropStale route's guard per delivery, against a plain route */
  staleGuard?: StaleGuardResults;
  /** live delivery latency alone and with a flood of late events behind it */
  flood?: FloodResults;
  archive?: ArchiveResults;
  /** the pipeline with the archive off and on, and a replay's throughput to the sink */
  archivePipeline?: ArchivePipelineResults;
  outage?: OutageResults;
  /** Redis bytes per event: per job, and the ledger's once the jobs are gone */
  memory?: MemoryResults;
  /** Redis memory and service RSS over a sustained paced run (receiver + worker) */
  soak?: SoakResults;
  /** the operator view's requests against 100 routes */
  operatorView?: OperatorViewResults;
  /** the pipeline with its route plain and filtered and transformed, alternating */
  routeShape?: RouteShapeResults;
  /** each target: true met, false missed, undefined not measured */
  targets: { ingestRatio?: boolean; ackP99?: boolean; ackP99Paced?: boolean; pipeline: Partial<Record<Topology, boolean>>; workerCpu?: boolean; reconcile?: boolean; reconcilePace?: boolean; soak?: boolean; operatorView?: boolean; archiveBytesPerEvent?: boolean; archiveSearchP99?: boolean; archivePipelineCost?: boolean; flood?: boolean; routeShapeCost?: boolean };
}

const resultsDir = fileURLToPath(new URL("./results/", import.meta.url));
const sinkScript = fileURLToPath(new URL("./processes/sink-server.ts", import.meta.url));
const log = (message: string) => process.stderr.write(`bench: ${message}\n`);

/**
 * `npm run bench`: starts Redis (own port, own temp dir), a sink, and for each scenario
 * the built service as separate processes; drives load from a new process per run
 * (autocannon, or the paced client); writes bench/results/<BENCH_OUTPUT>.json and .md.
 */
async function main() {
  const settings = loadBenchSettings();
  const busyCoresBefore = await machineBusyCores();
  const { scenarios, topologies, ...shownSettings } = settings;
  const dir = await mkdtemp(join(tmpdir(), "streamkeeper-bench-"));
  const redisServer = await startRedisServer({ dir: join(dir, "redis"), appendOnly: true });
  const redis = new Redis(redisServer.url, { maxRetriesPerRequest: 3 });
  const sink = await startChild<{ url: string }>(tsxArgs(sinkScript));
  const cpuProfileDir = settings.BENCH_CPU_PROFILE ? resultsDir : undefined;
  const results: BenchResults = {
    startedAt: new Date().toISOString(),
    settings: shownSettings,
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model.trim() ?? "unknown",
      node: process.version,
      redis: /redis_version:(\S+)/.exec(await redis.info("server"))?.[1] ?? "unknown",
      commit: gitCommit(),
      busyCoresBefore,
      loadBefore: loadavg().map(round2),
      loadAfter: [],
    },
    pipelines: [],
    targets: { pipeline: {} },
  };
  let failed = false;
  try {
    if (scenarios.has("ingest")) {
      results.ingest = await runIngest({ settings, redis, redisUrl: redisServer.url, redisPid: redisServer.process.pid!, dataDir: dir, downstreamUrl: `${sink.info.url}/deliver`, cpuProfileDir, log });
      const { single, fixedRate, fixedRatePaced, ratioToCeiling } = results.ingest;
      results.targets.ingestRatio = ratioToCeiling >= 0.75 && single.errors === 0;
      results.targets.ackP99 = (fixedRate.latencyMs.p99 ?? Infinity) < 15 && fixedRate.errors === 0;
      results.targets.ackP99Paced = (fixedRatePaced.latencyMs.p99 ?? Infinity) < 15 && fixedRatePaced.errors === 0;
    }
    for (let round = 1; round <= (scenarios.has("pipeline") ? settings.BENCH_PIPELINE_ROUNDS : 0); round++) {
      for (const topology of topologies) {
        const pipeline = await runPipeline({ settings, redis, redisUrl: redisServer.url, redisPid: redisServer.process.pid!, sinkPid: sink.process.pid!, dataDir: dir, sinkUrl: sink.info.url, cpuProfileDir, log }, topology);
        results.pipelines.push({ ...pipeline, round });
        if (topology === "floor") continue;
        // Met only when every round meets it; a round that measured nothing (pending) misses it.
        const met = pipeline.status === "measured" && pipeline.throughput.eventsPerSecond >= 2500 && pipeline.throughput.lost === 0 && pipeline.fixedRate.lost === 0;
        results.targets.pipeline[topology] = (results.targets.pipeline[topology] ?? true) && met;
      }
    }
    if (scenarios.has("worker-drain")) {
      results.workerDrain = await runWorkerDrain({ redis, redisUrl: redisServer.url, redisPid: redisServer.process.pid!, sinkUrl: sink.info.url, sinkPid: sink.process.pid!, dataDir: dir, events: settings.BENCH_DRAIN_EVENTS, cpuProfileDir, log });
      const worker = results.workerDrain.runs.service.costPerEvent.worker;
      results.targets.workerCpu = worker ? worker.cpuUs <= 200 : undefined;
    }
    if (scenarios.has("reconcile")) {
      results.reconcile = await runReconcile({ settings, redis, redisUrl: redisServer.url, dataDir: dir, sinkUrl: sink.info.url, cpuProfileDir, log });
      if (results.reconcile.status === "measured") {
        // At the default configuration the service may spend RECONCILE_RATE_SHARE of the limit: 90 % of that, no 429.
        const { shareOfAllowed, rateShare, rateLimited, failures } = results.reconcile;
        results.targets.reconcile = shareOfAllowed >= 0.9 * rateShare && rateLimited === 0 && failures === 0;
      }
    }
    if (scenarios.has("reconcile-pace")) {
      results.reconcilePace = await runReconcilePace({ settings, redis, redisUrl: redisServer.url, dataDir: dir, sinkUrl: sink.info.url, log });
      if (results.reconcilePace.status === "measured") {
        // Every shape: 90 % of the target (the share, or the quota when it binds), at most 1 % of the calls 429, every id recovered.
        results.targets.reconcilePace = results.reconcilePace.shapes.every((shape) => shape.shareOfTarget >= 0.9 && shape.rateLimited <= 0.01 * (shape.calls + shape.rateLimited) && shape.failures === 0);
      }
    }
    if (scenarios.has("memory")) {
      results.memory = await runMemory({ redis, events: settings.BENCH_MEMORY_EVENTS, log });
    }
    if (scenarios.has("operator-view")) {
      results.operatorView = await runOperatorView({ redis, redisUrl: redisServer.url, dataDir: dir, sinkUrl: sink.info.url, log });
      const view = results.operatorView;
      results.targets.operatorView = view.status === "measured" ? Math.max(view.overview.p99Ms, view.overviewConcurrent.p99Ms, view.pageFiles.p99Ms) < 200 : undefined;
    }
    if (scenarios.has("route-shape")) {
      results.routeShape = await runRouteShape({ settings, redis, redisUrl: redisServer.url, redisPid: redisServer.process.pid!, sinkPid: sink.process.pid!, dataDir: dir, sinkUrl: sink.info.url, cpuProfileDir, log }, settings.BENCH_ROUTE_SHAPE_ROUNDS);
      const { ratio, rounds } = results.routeShape;
      const nothingLost = rounds.every(({ plain, shaped }) => [plain, shaped].every((run) => run.status === "measured" && run.throughput.lost === 0));
      results.targets.routeShapeCost = ratio === undefined ? undefined : ratio <= 1.1 && nothingLost;
    }
    if (scenarios.has("stale-guard")) {
      results.staleGuard = await runStaleGuard({ redis, redisUrl: redisServer.url, dataDir: dir, sinkUrl: sink.info.url, log });
    }
    if (scenarios.has("flood")) {
      results.flood = await runFlood({ redis, redisUrl: redisServer.url, dataDir: dir, sinkUrl: sink.info.url, floodEvents: settings.BENCH_FLOOD_EVENTS, liveRate: settings.BENCH_FLOOD_LIVE_RATE, liveSeconds: settings.BENCH_FLOOD_LIVE_S, log });
      // Judged only when the flood still waited as the live phase ended: else it measured live events alone twice.
      const flood = results.flood;
      if (flood.status === "measured" && flood.withFlood.lateWaitingAtEnd > 0) results.targets.flood = flood.ratio !== undefined && flood.ratio <= 2 && flood.lost === 0;
    }
    if (scenarios.has("archive")) {
      log("archive: Postgres start, bytes per event, search by entity over BENCH_ARCHIVE_SEARCH_ROWS rows");
      results.archive = await runArchive({ sizeEvents: 20_000, searchRows: settings.BENCH_ARCHIVE_SEARCH_ROWS, searches: 500 });
      results.targets.archiveBytesPerEvent = results.archive.bytesPerEvent <= 600;
      results.targets.archiveSearchP99 = results.archive.searchByEntityP99Ms <= 50;
    }
    if (scenarios.has("archive-pipeline")) {
      results.archivePipeline = await runArchivePipeline(
        { settings, redis, redisUrl: redisServer.url, redisPid: redisServer.process.pid!, sinkPid: sink.process.pid!, dataDir: dir, sinkUrl: sink.info.url, cpuProfileDir, log },
        { rounds: settings.BENCH_ARCHIVE_ROUNDS, replayEvents: settings.BENCH_ARCHIVE_REPLAY_EVENTS },
      );
      const { ratios, rounds, archived } = results.archivePipeline;
      const nothingLost = archived.complete >= archived.stored && rounds.every(({ on, off }) => [on, off].every((run) => run.status === "measured" && run.throughput.lost === 0 && run.fixedRate.lost === 0));
      const { eventsPerSecond, cpuPerEvent, ingestOnToFloor } = ratios;
      results.targets.archivePipelineCost = eventsPerSecond === undefined || cpuPerEvent === undefined || ingestOnToFloor === undefined ? undefined : eventsPerSecond >= 0.9 && cpuPerEvent <= 1 / 0.9 && ingestOnToFloor >= 0.9 && nothingLost;
    }
    if (scenarios.has("soak")) {
      results.soak = await runSoak({ settings, redis, redisUrl: redisServer.url, redisPid: redisServer.process.pid!, sinkPid: sink.process.pid!, dataDir: dir, sinkUrl: sink.info.url, cpuProfileDir, log });
      if (results.soak.status === "measured") {
        // The ledger grows with every new id for the dedupe window by design: judged on the rest.
        const { usedMemoryLessLedger, lost, load, paceKept } = results.soak;
        results.targets.soak = usedMemoryLessLedger.spread <= 0.1 && lost === 0 && load.errors === 0 && paceKept;
      }
    }
    if (scenarios.has("outage")) {
      results.outage = await runOutage({ settings, redis, redisUrl: redisServer.url, dataDir: dir, log });
    }
    results.floorRatios = floorRatios(results);
  } catch (error) {
    failed = true;
    throw error;
  } finally {
    results.finishedAt = new Date().toISOString();
    results.machine.loadAfter = loadavg().map(round2);
    redis.disconnect();
    await sink.stop();
    await redisServer.stop();
    // Keep the service logs of a failed run for a look.
    if (failed) log(`the run failed; service logs kept in ${dir}`);
    else await rm(dir, { recursive: true, force: true });
  }
  const table = formatResults(results);
  await writeFile(join(resultsDir, `${settings.BENCH_OUTPUT}.json`), `${JSON.stringify(results, null, 2)}\n`);
  await writeFile(join(resultsDir, `${settings.BENCH_OUTPUT}.md`), table);
  process.stdout.write(table);
}

function gitCommit(): string {
  try {
    const commit = execSync("git rev-parse --short HEAD", { encoding: "utf8" }).trim();
    const dirty = execSync("git status --porcelain --untracked-files=no -- . ':(exclude)bench/results'", { encoding: "utf8" }).trim() !== "";
    return dirty ? `${commit} (with uncommitted changes)` : commit;
  } catch {
    return "unknown";
  }
}

function round2(value: number): number {
  return Math.round(value * 100) / 100;
}

await main().catch((error: Error) => {
  process.stderr.write(`error: ${error.message}${error.cause instanceof Error ? ` (${error.cause.message})` : ""}\n`);
  process.exitCode = 1;
});
