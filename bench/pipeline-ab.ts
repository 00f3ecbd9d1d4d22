/**
 * Two builds of the service in the split pipeline beside the floor pipeline, alternating:
 * for a change whose effect the machine's drift between runs would hide (docs/benchmarks.md).
 *   node --import tsx bench/pipeline-ab.ts <dist-a> <dist-b> [rounds]
 * Each a build's output directory (`npm run build` writes dist/; copy it aside before the
 * change, with package.json and node_modules beside it). Its own redis-server and sink, as
 * `npm run bench`; per round the floor, then A and B in turn (B first in every other
 * round), each the pipeline scenario's split run (`--role receiver` + `--role worker`,
 * BENCH_* settings as for `npm run bench`). Prints each run's events/s, lost events and CPU
 * per delivered event of the receiver, the worker and Redis, over that round's floor, then
 * the medians of those ratios.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { startRedisServer } from "../src/redis/redis-server.js";
import { loadBenchSettings } from "./bench-settings.js";
import { abBuilds } from "./lib/ab-builds.js";
import { median } from "./lib/percentile.js";
import { startChild, tsxArgs } from "./lib/start-child.js";
import { runPipeline, type PipelineContext } from "./scenarios/run-pipeline.js";

const builds = abBuilds("pipeline-ab.ts");
const settings = loadBenchSettings();
const dir = await mkdtemp(join(tmpdir(), "sk-pipeline-ab-"));
const redisServer = await startRedisServer({ dir: join(dir, "redis"), appendOnly: true });
const redis = new Redis(redisServer.url, { maxRetriesPerRequest: 3 });
const sink = await startChild<{ url: string }>(tsxArgs(fileURLToPath(new URL("./processes/sink-server.ts", import.meta.url))));
const context: PipelineContext = {
  settings,
  redis,
  redisUrl: redisServer.url,
  redisPid: redisServer.process.pid!,
  sinkPid: sink.process.pid!,
  dataDir: dir,
  sinkUrl: sink.info.url,
  log: (message) => process.stderr.write(`pipeline-ab: ${message}\n`),
};
const processes = ["receiver", "worker", "redis"] as const;
type Figures = { eventsPerSecond: number; lost: number } & Record<(typeof processes)[number], number>;

/** One split (or floor) run: its events/s, lost events, and CPU µs per delivered event per process. */
async function run(build: "floor" | "a" | "b"): Promise<Figures> {
  const entry = build === "floor" ? undefined : builds.entry(build);
  const result = await runPipeline({ ...context, entry }, build === "floor" ? "floor" : "split");
  if (result.status !== "measured") throw new Error(`${build}: ${result.reason}`);
  const { throughput, fixedRate } = result;
  const cpu = (name: string) => throughput.costPerEvent[name]?.cpuUs ?? Number.NaN;
  return { eventsPerSecond: throughput.eventsPerSecond, lost: throughput.lost + fixedRate.lost, receiver: cpu("receiver"), worker: cpu("worker"), redis: cpu("redis") };
}

const ratios: Record<"a" | "b", Record<"eventsPerSecond" | (typeof processes)[number], number[]>> = {
  a: { eventsPerSecond: [], receiver: [], worker: [], redis: [] },
  b: { eventsPerSecond: [], receiver: [], worker: [], redis: [] },
};
try {
  for (let round = 1; round <= builds.rounds; round++) {
    const floor = await run("floor");
    const line = [`round ${round}: floor ${Math.round(floor.eventsPerSecond)} events/s (receiver ${floor.receiver}, worker ${floor.worker}, Redis ${floor.redis} µs)`];
    for (const build of builds.order(round)) {
      const ours = await run(build);
      ratios[build].eventsPerSecond.push(ours.eventsPerSecond / floor.eventsPerSecond);
      for (const name of processes) ratios[build][name].push(ours[name] / floor[name]);
      line.push(
        `${build.toUpperCase()} ${Math.round(ours.eventsPerSecond)} events/s (${(ours.eventsPerSecond / floor.eventsPerSecond).toFixed(2)} ×), lost ${ours.lost}, ` +
          processes.map((name) => `${name} ${ours[name]} µs (${(ours[name] / floor[name]).toFixed(2)} ×)`).join(", "),
      );
    }
    process.stdout.write(`${line.join("; ")}\n`);
  }
  for (const build of ["a", "b"] as const) {
    const figures = ratios[build];
    process.stdout.write(
      `${build.toUpperCase()} over the floor, medians: events/s ${median(figures.eventsPerSecond).toFixed(2)} ×, ` + processes.map((name) => `${name} ${median(figures[name]).toFixed(2)} ×`).join(", ") + "\n",
    );
  }
} finally {
  redis.disconnect();
  await sink.stop();
  await redisServer.stop();
  await rm(dir, { recursive: true, force: true });
}
