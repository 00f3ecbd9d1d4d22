import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Redis } from "ioredis";
import type { BenchSettings } from "../bench-settings.js";
import type { LoadOptions, LoadResult } from "../lib/load-types.js";
import type { SinkStats } from "../processes/sink-server.js";
import { startCostMeter } from "../lib/cpu-usage.js";
import { createSinkProbe } from "../lib/create-sink-probe.js";
import { commandCalls, countLedgerIds } from "../lib/redis-figures.js";
import { runLoad } from "../lib/run-load.js";
import { startChild, tsxArgs } from "../lib/start-child.js";
import { benchAuthorization, startServiceProcess, type ServiceProcess } from "../lib/start-service-process.js";

export interface DrainResult {
  load: LoadResult;
  /** events in the ledger at the end: every one the service stored (acknowledged or not) */
  eventsStored: number;
  /** distinct ids the sink received in this run */
  delivered: number;
  /** stored minus delivered over the whole pipeline scenario: must be 0 */
  lost: number;
  /** deliveries of an id the sink already had (allowed: delivery is at least once) */
  repeats: number;
  /** from the first POST to the sink having every stored event */
  seconds: number;
  eventsPerSecond: number;
  endToEndMs: SinkStats["window"]["latencyMs"];
  /** Redis commands per delivered event and the µs Redis spent in them (INFO commandstats over the run and its drain) */
  redisCallsPerEvent: Record<string, { calls: number; usec: number }>;
  /** per process, from the run's start until the sink had every event: CPU µs and read/write system calls per delivered event */
  costPerEvent: Record<string, { cpuUs: number; syscalls: number }>;
}

/**
 * `all`: one `start --role all` process, as `npm start` runs it; `split`: a `--role receiver`
 * and a `--role worker` process; `floor`: split's shape with the bench's floor server and
 * floor worker (Express + one BullMQ add; BullMQ + one POST), the most the stack allows.
 */
export type Topology = "all" | "split" | "floor";

const floorServer = fileURLToPath(new URL("../processes/floor-server.ts", import.meta.url));
const floorWorker = fileURLToPath(new URL("../processes/floor-worker.ts", import.meta.url));

export type PipelineResults =
  | {
      status: "measured";
      topology: Topology;
      throughput: DrainResult;
      fixedRate: DrainResult;
      routeConcurrency: number | "default";
      /** peak RSS per service process (`all`, or `receiver` and `worker`) */
      peakRssBytes: Record<string, number | undefined>;
    }
  | { status: "pending"; topology: Topology; reason: string };

export interface PipelineContext {
  settings: BenchSettings;
  redis: Redis;
  redisUrl: string;
  redisPid: number;
  sinkPid: number;
  dataDir: string;
  /** the sink process (bench/processes/sink-server.ts) */
  sinkUrl: string;
  cpuProfileDir?: string;
  /** another build's `cli/main.js` to run as the service (bench/pipeline-ab.ts); the repository's dist/ when absent */
  entry?: string;
  log(message: string): void;
}

const streamId = "est_38ANnv8pQhqsZrX2VFbftv";

/**
 * Pipeline: the whole service with one route to the sink process. First as fast as the
 * load generator goes, then waiting until the sink has every event the ledger holds: the
 * sustained events/s from POST to downstream. Then a fixed moderate rate, evenly paced,
 * for the end-to-end latency (sink receive time minus the send time stamped in each event).
 * `extraEnv` adds settings to the service's (the archive scenario runs it with ARCHIVE on and off);
 * `routeFields` to its one route (the route-shape scenario adds a filter and a transform);
 * `trees`: processes measured with their children (Postgres's backends) in `costPerEvent`.
 */
export async function runPipeline(context: PipelineContext, topology: Topology, extraEnv: Record<string, string> = {}, routeFields?: Record<string, unknown>, trees: Record<string, number> = {}): Promise<PipelineResults> {
  const { settings, log, redis } = context;
  await redis.flushall();
  const queuePrefix = `bench-pipeline-${topology}`;
  const env = { ...(await routeEnv(context, routeFields)), ...extraEnv };
  const start = (role: "all" | "receiver" | "worker") =>
    startServiceProcess({ role, redisUrl: context.redisUrl, queuePrefix, dataDir: context.dataDir, env, cpuProfileDir: context.cpuProfileDir, entry: context.entry });
  const processes: Record<string, Pick<ServiceProcess, "pid" | "publicUrl" | "peakRssBytes" | "stop">> = {};
  try {
    if (topology === "all") processes.all = await start("all");
    else if (topology === "split") [processes.receiver, processes.worker] = [await start("receiver"), await start("worker")];
    else [processes.receiver, processes.worker] = await startFloor(context, queuePrefix);
    const ingress = processes.all ?? processes.receiver!;
    const watch: Record<string, number> = { redis: context.redisPid, sink: context.sinkPid };
    for (const [name, service] of Object.entries(processes)) watch[name === "all" ? "service" : name] = service.pid;
    const load = (overrides: Partial<LoadOptions> = {}): LoadOptions => ({
      url: `${ingress.publicUrl}/webhooks/${streamId}`,
      connections: settings.BENCH_CONNECTIONS,
      durationS: settings.BENCH_DURATION_S,
      batchSize: 1,
      authorization: benchAuthorization,
      streamId,
      watch,
      ...overrides,
    });
    const sink = createSinkProbe(context.sinkUrl);
    // The floor keeps no ledger: what it acknowledged is what it stored.
    let acknowledged = 0;
    const runLoadCounted = async (options: LoadOptions) => {
      const result = await runLoad(options);
      acknowledged += result.eventsAcknowledged;
      return result;
    };
    const stored = () => (topology === "floor" ? Promise.resolve(acknowledged) : countLedgerIds(redis, queuePrefix));

    // Warm-up at a moderate rate; it also tells whether this build delivers at all.
    await sink.reset();
    await runLoadCounted(load({ durationS: Math.max(1, settings.BENCH_WARMUP_S), overallRate: settings.BENCH_PIPELINE_RATE, paced: true }));
    if (!(await sink.until(1, 10_000))) {
      return { status: "pending", topology, reason: "no event reached the sink within 10 s: this build does not dispatch yet" };
    }
    const drainMs = settings.BENCH_DRAIN_TIMEOUT_S * 1000;
    const drainAll = () => sink.untilAllOf(stored, drainMs);
    await drainAll();

    const drain = async (options: LoadOptions): Promise<DrainResult> => {
      await sink.mark();
      const before = await sink.stats();
      const callsBefore = await commandCalls(redis);
      const costs = startCostMeter(watch, trees);
      const result = await runLoadCounted(options);
      await drainAll();
      const after = await sink.stats();
      const callsAfter = await commandCalls(redis);
      const costPerEvent = costs.per(after.window.unique);
      const eventsStored = await stored();
      const seconds = ((after.window.lastAt ?? result.startedAt) - result.startedAt) / 1000;
      return {
        load: result,
        eventsStored,
        delivered: after.window.unique,
        lost: eventsStored - after.unique,
        repeats: after.repeats - before.repeats,
        seconds: Math.round(seconds * 100) / 100,
        eventsPerSecond: seconds > 0 ? Math.round(after.window.unique / seconds) : 0,
        endToEndMs: after.window.latencyMs,
        redisCallsPerEvent: perEvent(callsBefore, callsAfter, after.window.unique),
        costPerEvent,
      };
    };
    log(`pipeline (${topology}): as fast as it goes, then drain to the sink`);
    const throughput = await drain(load());
    log(`pipeline (${topology}): ${settings.BENCH_PIPELINE_RATE} events/s evenly paced, end-to-end latency`);
    const fixedRate = await drain(load({ overallRate: settings.BENCH_PIPELINE_RATE, paced: true }));
    return {
      status: "measured",
      topology,
      throughput,
      fixedRate,
      routeConcurrency: settings.BENCH_ROUTE_CONCURRENCY ?? "default",
      peakRssBytes: Object.fromEntries(Object.entries(processes).map(([name, service]) => [name, service.peakRssBytes()])),
    };
  } finally {
    for (const service of Object.values(processes)) await service.stop();
  }
}

/** The floor server and floor worker, shaped like service processes for the run above. */
async function startFloor(context: PipelineContext, queuePrefix: string) {
  const asProcess = (child: Awaited<ReturnType<typeof startChild<{ url?: string }>>>) => ({
    pid: child.process.pid!,
    publicUrl: child.info.url ?? "",
    peakRssBytes: child.peakRssBytes,
    stop: () => child.stop(),
  });
  const server = await startChild<{ url?: string }>(tsxArgs(floorServer, [context.redisUrl, queuePrefix]));
  const worker = await startChild<{ url?: string }>(tsxArgs(floorWorker, [context.redisUrl, queuePrefix, `${context.sinkUrl}/deliver`, "post"]));
  return [asProcess(server), asProcess(worker)] as const;
}

/** Calls and µs per event of each command called at least once per 100 events, most time first. */
function perEvent(before: Record<string, { calls: number; usec: number }>, after: Record<string, { calls: number; usec: number }>, events: number) {
  const per = (value: number) => Math.round((value / Math.max(1, events)) * 100) / 100;
  const rows = Object.entries(after)
    .map(([command, { calls, usec }]) => [command, { calls: per(calls - (before[command]?.calls ?? 0)), usec: per(usec - (before[command]?.usec ?? 0)) }] as const)
    .filter(([, cost]) => cost.calls >= 0.01)
    .sort((a, b) => b[1].usec - a[1].usec);
  return Object.fromEntries(rows);
}

/** One route `default` for every event to the sink: DOWNSTREAM_URL, or a routes file when BENCH_ROUTE_CONCURRENCY or `routeFields` are set. */
async function routeEnv(context: PipelineContext, routeFields?: Record<string, unknown>): Promise<Record<string, string>> {
  const url = `${context.sinkUrl}/deliver`;
  const concurrency = context.settings.BENCH_ROUTE_CONCURRENCY;
  if (!concurrency && !routeFields) return { DOWNSTREAM_URL: url };
  const routesFile = join(context.dataDir, "bench-routes.json");
  await writeFile(routesFile, JSON.stringify([{ name: "default", match: "*", url, ...(concurrency ? { concurrency } : {}), ...routeFields }]));
  return { ROUTES_FILE: routesFile };
}
