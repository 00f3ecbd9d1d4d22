import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import pg from "pg";
import { startPostgresServer, systemPostgresBinDir } from "../../src/archive/postgres-server.js";
import { freePort } from "../../src/redis/redis-server.js";
import { countLedgerIds } from "../lib/redis-figures.js";
import { median, round } from "../lib/percentile.js";
import { benchAuthorization, startServiceProcess } from "../lib/start-service-process.js";
import type { LoadOptions, LoadResult } from "../lib/load-types.js";
import { runLoad } from "../lib/run-load.js";
import { startChild, tsxArgs } from "../lib/start-child.js";
import { archiveOutboxKey } from "../../src/archive/archive-outbox.js";
import { runPipeline, type PipelineContext, type PipelineResults } from "./run-pipeline.js";
import { adminHeaders } from "../../test/helpers/credentials.js";

export interface ReplayResults {
  /** archived events in the replayed window */
  matched: number;
  delivered: number;
  failed: number;
  /** from POST /admin/replays until the replay had queued every event (state done) */
  queuedSeconds: number;
  /** from POST /admin/replays until every matched event's replay delivery was archived as delivered */
  seconds: number;
  eventsPerSecond: number;
}

export interface ArchiveRound {
  round: number;
  /** the split pipeline (a `--role receiver` and a `--role worker` process), ARCHIVE=off then on */
  off: PipelineResults;
  on: PipelineResults;
  /** single events as fast as they go, one process each: the floor server, the receiver with the archive off, then on */
  ingest: { floor: LoadResult; off: LoadResult; on: LoadResult };
  /** CPU µs per delivered event of the pipeline's processes together (receiver, worker, Redis, Postgres), off and on */
  totalCpuUs: { off?: number; on?: number };
  /** the ARCHIVE=on pipeline run's events once the sink had them all: stored (the ledger), archived, still in the outbox */
  archive: { stored: number; archived: number; inOutbox: number; deliveries?: Deliveries };
}

/** Deliveries archived: kept in their event's row (write-archive-batch.ts), or rows of attempts of their own. */
interface Deliveries {
  inEventRow: number;
  ownRow: number;
}

export interface ArchivePipelineResults {
  rounds: ArchiveRound[];
  /**
   * Medians over the rounds of each round's ratio (the targets: each ≥ 0.9, or ≤ 1.11 for
   * CPU): on ÷ off of the pipeline's events/s; on ÷ off of the CPU all of its processes
   * (receiver, worker, Redis, Postgres) spent per delivered event; the receiver's ingest,
   * archive on, over the floor server's.
   */
  ratios: { eventsPerSecond?: number; cpuPerEvent?: number; ingestOnToFloor?: number; ingestOffToFloor?: number };
  /** after the last round: events the ledger held, and how many the archive held once the outbox drained */
  archived: { stored: number; complete: number };
  replay: ReplayResults | { status: "pending"; reason: string };
}

const adminToken = "bench-archive-admin-token";
const floorScript = new URL("../processes/floor-server.ts", import.meta.url).pathname;
const streamId = "est_38ANnv8pQhqsZrX2VFbftv";

/**
 * The archive's cost to the pipeline (docs/benchmarks.md, "The archive's cost"): rounds of
 * the split pipeline (run-pipeline.ts) with the archive off then on, and of the ingest
 * (the floor server, the receiver with the archive off, then on), alternating in one run so
 * a machine's drift falls on both alike; Postgres's CPU (every backend) counted with the
 * service's processes. Then the replay of `replayEvents` of the archived events to a route
 * added afterwards, to the sink.
 */
export async function runArchivePipeline(context: PipelineContext, options: { rounds: number; replayEvents: number }): Promise<ArchivePipelineResults> {
  const { log } = context;
  const binDir = systemPostgresBinDir();
  if (!binDir) throw new Error("the archive bench needs initdb and postgres: apt-get install -y postgresql");
  const postgresDir = join(context.dataDir, "archive-postgres");
  const server = await startPostgresServer({ binDir, dataDir: join(postgresDir, "data"), port: await freePort(), socketDir: postgresDir });
  const pool = new pg.Pool({ connectionString: server.url, max: 2 });
  const deliveries = async (): Promise<Deliveries> => {
    const row = (await pool.query<{ kept: string; own: string }>("SELECT (SELECT count(*) FROM events WHERE delivered IS NOT NULL) AS kept, (SELECT count(*) FROM attempts WHERE outcome = 'delivered') AS own")).rows[0]!;
    return { inEventRow: Number(row.kept), ownRow: Number(row.own) };
  };
  const archivedCount = async () => Number((await pool.query<{ n: string }>("SELECT count(*) AS n FROM events").catch(() => ({ rows: [{ n: "0" }] }))).rows[0]!.n);
  const archiveEnv = { ARCHIVE: "on", ARCHIVE_DATABASE_URL: server.url };
  const trees = { postgres: server.process.pid! };
  const queuePrefix = "bench-pipeline-split";
  try {
    const rounds: ArchiveRound[] = [];
    for (let round = 1; round <= options.rounds; round++) {
      log(`archive pipeline, round ${round}: ARCHIVE=off`);
      const off = await runPipeline(context, "split", { ARCHIVE: "off" }, undefined, trees);
      await pool.query("TRUNCATE events, attempts").catch(() => undefined);
      log(`archive pipeline, round ${round}: ARCHIVE=on`);
      const on = await runPipeline(context, "split", archiveEnv, undefined, trees);
      const archive = { stored: await countLedgerIds(context.redis, queuePrefix), archived: await archivedCount(), inOutbox: await context.redis.xlen(archiveOutboxKey(queuePrefix)), deliveries: await deliveries() };
      log(`archive ingest, round ${round}: the floor server, then the receiver with ARCHIVE=off, then on`);
      const ingest = { floor: await ingestFloor(context), off: await ingestReceiver(context, { ARCHIVE: "off" }), on: await ingestReceiver(context, archiveEnv) };
      rounds.push({ round, off, on, ingest, totalCpuUs: { off: totalCpuUs(off), on: totalCpuUs(on) }, archive });
    }

    // The last round's pipeline again, on the same Redis and archive, with a route added
    // afterwards: it drains what that run left in the outbox, then replays the oldest
    // `replayEvents` to the sink.
    await pool.query("TRUNCATE events, attempts");
    await runPipeline(context, "split", archiveEnv);
    const stored = await countLedgerIds(context.redis, queuePrefix);
    const routesFile = join(context.dataDir, "bench-archive-routes.json");
    await writeFile(routesFile, JSON.stringify([{ name: "backfill", match: "*", url: `${context.sinkUrl}/deliver` }]));
    const service = await startServiceProcess({ role: "all", redisUrl: context.redisUrl, queuePrefix, dataDir: context.dataDir, env: { ...archiveEnv, ROUTES_FILE: routesFile, ADMIN_TOKEN: adminToken } });
    try {
      const complete = await until(async () => ((await archivedCount()) >= stored ? archivedCount() : undefined), 120_000).catch(archivedCount);
      const replay = await runReplay(pool, service.adminUrl, options.replayEvents, log);
      return { rounds, ratios: archiveRatios(rounds), archived: { stored, complete }, replay };
    } finally {
      await service.stop();
    }
  } finally {
    await pool.end();
    await server.stop();
  }
}

/** Each round's ratios, then their medians. */
function archiveRatios(rounds: ArchiveRound[]): ArchivePipelineResults["ratios"] {
  const each = (of: (round: ArchiveRound) => number | undefined) => {
    const values = rounds.map(of).filter((value): value is number => value !== undefined && Number.isFinite(value));
    return values.length === 0 ? undefined : round(median(values), 3);
  };
  return {
    eventsPerSecond: each((r) => ratioOf(measured(r.on)?.eventsPerSecond, measured(r.off)?.eventsPerSecond)),
    cpuPerEvent: each((r) => ratioOf(r.totalCpuUs.on, r.totalCpuUs.off)),
    ingestOnToFloor: each((r) => ratioOf(r.ingest.on.requestsPerSecond, r.ingest.floor.requestsPerSecond)),
    ingestOffToFloor: each((r) => ratioOf(r.ingest.off.requestsPerSecond, r.ingest.floor.requestsPerSecond)),
  };
}

const measured = (run: PipelineResults) => (run.status === "measured" ? run.throughput : undefined);

/** The as-fast-as-it-goes run's CPU per delivered event over the pipeline's processes (the sink's is the bench's own). */
function totalCpuUs(run: PipelineResults): number | undefined {
  const costs = measured(run)?.costPerEvent;
  return costs && ["receiver", "worker", "redis", "postgres"].reduce((sum, name) => sum + (costs[name]?.cpuUs ?? 0), 0);
}

const ratioOf = (a: number | undefined, b: number | undefined) => (a === undefined || !b ? undefined : a / b);

function ingestLoad(context: PipelineContext, url: string, watch: Record<string, number>): LoadOptions {
  return { url: `${url}/webhooks/${streamId}`, connections: context.settings.BENCH_CONNECTIONS, durationS: context.settings.BENCH_DURATION_S, batchSize: 1, authorization: benchAuthorization, streamId, watch };
}

async function warmUp(context: PipelineContext, url: string) {
  if (context.settings.BENCH_WARMUP_S > 0) await runLoad({ ...ingestLoad(context, url, {}), durationS: context.settings.BENCH_WARMUP_S });
}

/** The floor server (Express + one BullMQ add per event) as run-ingest.ts loads it. */
async function ingestFloor(context: PipelineContext): Promise<LoadResult> {
  await context.redis.flushall();
  const server = await startChild<{ url: string }>(tsxArgs(floorScript, [context.redisUrl, "bench-floor"]));
  try {
    await warmUp(context, server.info.url);
    return await runLoad(ingestLoad(context, server.info.url, { floor: server.process.pid!, redis: context.redisPid }));
  } finally {
    await server.stop();
  }
}

/** A `--role receiver` process with one route (no worker: it only stores), as run-ingest.ts loads it. */
async function ingestReceiver(context: PipelineContext, env: Record<string, string>): Promise<LoadResult> {
  await context.redis.flushall();
  const service = await startServiceProcess({ role: "receiver", redisUrl: context.redisUrl, queuePrefix: "bench-archive-ingest", dataDir: context.dataDir, env: { DOWNSTREAM_URL: `${context.sinkUrl}/deliver`, ...env }, cpuProfileDir: context.cpuProfileDir });
  try {
    await warmUp(context, service.publicUrl);
    return await runLoad(ingestLoad(context, service.publicUrl, { service: service.pid, redis: context.redisPid }));
  } finally {
    await service.stop();
  }
}

async function runReplay(pool: pg.Pool, adminUrl: string, events: number, log: (message: string) => void): Promise<ArchivePipelineResults["replay"]> {
  const bounds = (await pool.query<{ first: Date | null; after: Date | null }>(
    "SELECT (SELECT min(arrived_at) FROM events) AS first, (SELECT arrived_at FROM events ORDER BY arrived_at OFFSET $1 LIMIT 1) AS after",
    [events],
  )).rows[0]!;
  if (!bounds.first) return { status: "pending", reason: "the on run archived no event" };
  const body = { route: "backfill", since: bounds.first.toISOString(), ...(bounds.after ? { until: bounds.after.toISOString() } : {}) };
  const admin = (path: string, init: RequestInit = {}) => fetch(`${adminUrl}${path}`, { ...init, headers: adminHeaders(adminToken, { "content-type": "application/json" }) });
  const began = performance.now();
  const answer = await admin("/admin/replays", { method: "POST", body: JSON.stringify(body) });
  if (answer.status !== 202) return { status: "pending", reason: `POST /admin/replays answered ${answer.status}: ${await answer.text()}` };
  const { replayId, matched } = (await answer.json()) as { replayId: string; matched: number };
  log(`archive pipeline: replay of ${matched} archived events to the sink`);
  let queuedSeconds: number | undefined;
  const status = await until(async () => {
    const state = (await (await admin(`/admin/replays/${replayId}`)).json()) as { state: string; delivered: number; failed: number };
    if (state.state !== "running" && queuedSeconds === undefined) queuedSeconds = (performance.now() - began) / 1000;
    return state.delivered + state.failed >= matched || (state.state !== "running" && state.state !== "done") ? state : undefined;
  }, 300_000);
  const seconds = (performance.now() - began) / 1000;
  return {
    matched,
    delivered: status.delivered,
    failed: status.failed,
    queuedSeconds: round(queuedSeconds ?? seconds, 2)!,
    seconds: round(seconds, 2)!,
    eventsPerSecond: Math.round(status.delivered / seconds),
  };
}

/** Polls `check` every 100 ms until it answers a value. */
async function until<T>(check: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
