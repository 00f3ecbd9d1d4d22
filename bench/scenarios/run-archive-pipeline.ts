import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import pg from "pg";
import { startPostgresServer, systemPostgresBinDir } from "../../src/archive/postgres-server.js";
import { freePort } from "../../src/redis/redis-server.js";
import { countLedgerIds } from "../lib/redis-figures.js";
import { round } from "../lib/percentile.js";
import { startServiceProcess } from "../lib/start-service-process.js";
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

export interface ArchivePipelineResults {
  /** the pipeline scenario, one `--role all` process, ARCHIVE=off then ARCHIVE=on, same run */
  off: PipelineResults;
  on: PipelineResults;
  /** on ÷ off of the as-fast-as-it-goes events/s (the target: ≥ 0.9) */
  ratio?: number;
  /** events the ledger held after the on run, and how many the archive held: once the sink had them all, and after the outbox drained */
  archived: { stored: number; atDrain: number; complete: number };
  replay: ReplayResults | { status: "pending"; reason: string };
}

const adminToken = "bench-archive-admin-token";

/**
 * The archive's cost to the pipeline: the pipeline scenario (run-pipeline.ts) with the
 * archive off and on in the same run, against a throwaway Postgres; then the replay of
 * `replayEvents` of the events the on run archived to a route added afterwards, to the sink.
 */
export async function runArchivePipeline(context: PipelineContext, options: { replayEvents: number }): Promise<ArchivePipelineResults> {
  const { log } = context;
  const binDir = systemPostgresBinDir();
  if (!binDir) throw new Error("the archive bench needs initdb and postgres: apt-get install -y postgresql");
  const postgresDir = join(context.dataDir, "archive-postgres");
  const server = await startPostgresServer({ binDir, dataDir: join(postgresDir, "data"), port: await freePort(), socketDir: postgresDir });
  const pool = new pg.Pool({ connectionString: server.url, max: 2 });
  const archivedCount = async () => Number((await pool.query<{ n: string }>("SELECT count(*) AS n FROM events").catch(() => ({ rows: [{ n: "0" }] }))).rows[0]!.n);
  try {
    log("archive pipeline: ARCHIVE=off");
    const off = await runPipeline(context, "all", { ARCHIVE: "off" });
    log("archive pipeline: ARCHIVE=on");
    const on = await runPipeline(context, "all", { ARCHIVE: "on", ARCHIVE_DATABASE_URL: server.url });
    const atDrain = await archivedCount();
    const queuePrefix = "bench-pipeline-all";
    const stored = await countLedgerIds(context.redis, queuePrefix);

    // A service on the same Redis and archive with a route added afterwards: it drains what
    // the on run left in the outbox, then replays the oldest `replayEvents` to the sink.
    const routesFile = join(context.dataDir, "bench-archive-routes.json");
    await writeFile(routesFile, JSON.stringify([{ name: "backfill", match: "*", url: `${context.sinkUrl}/deliver` }]));
    const service = await startServiceProcess({
      role: "all",
      redisUrl: context.redisUrl,
      queuePrefix,
      dataDir: context.dataDir,
      env: { ARCHIVE: "on", ARCHIVE_DATABASE_URL: server.url, ROUTES_FILE: routesFile, ADMIN_TOKEN: adminToken },
    });
    try {
      const complete = await until(async () => ((await archivedCount()) >= stored ? archivedCount() : undefined), 120_000).catch(archivedCount);
      const replay = await runReplay(pool, service.adminUrl, options.replayEvents, log);
      const offRate = off.status === "measured" ? off.throughput.eventsPerSecond : undefined;
      const onRate = on.status === "measured" ? on.throughput.eventsPerSecond : undefined;
      return { off, on, ratio: offRate && onRate ? round(onRate / offRate, 3) : undefined, archived: { stored, atDrain, complete }, replay };
    } finally {
      await service.stop();
    }
  } finally {
    await pool.end();
    await server.stop();
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
