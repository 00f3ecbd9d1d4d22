/**
 * Where Redis spends its CPU per delivered event, the split pipeline beside the floor's:
 *   node --import tsx bench/redis-profile.ts [rounds]
 * Needs `perf` (Linux). Its own redis-server (append-only file on) and sink, as `npm run
 * bench`; per round the floor, then the split pipeline (the pipeline scenario's runs), each
 * with `perf record` on Redis during the as-fast-as-it-goes run and its drain. Prints, per
 * delivered event and summed over the rounds, the µs of Redis CPU in each function: by name
 * where the binary exports it, otherwise by the nearest exported function before it
 * (`lua_close+0x170`: a static function, Lua's own on a Redis built with it inside;
 * docs/benchmarks.md, "Where Redis's excess goes", says which is which on Debian's).
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, readlink, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { startRedisServer } from "../src/redis/redis-server.js";
import { loadBenchSettings } from "./bench-settings.js";
import { startChild, tsxArgs } from "./lib/start-child.js";
import { runPipeline, type PipelineContext } from "./scenarios/run-pipeline.js";

const rounds = Number(process.argv[2] ?? 2);
const hz = 4000;
const settings = loadBenchSettings();
const dir = await mkdtemp(join(tmpdir(), "sk-redis-profile-"));
const redisServer = await startRedisServer({ dir: join(dir, "redis"), appendOnly: true });
const redisPid = redisServer.process.pid!;
const redis = new Redis(redisServer.url, { maxRetriesPerRequest: 3 });
const sink = await startChild<{ url: string }>(tsxArgs(fileURLToPath(new URL("./processes/sink-server.ts", import.meta.url))));
const exported = exportedFunctions(await readlink(`/proc/${redisPid}/exe`));
const totals: Record<"floor" | "split", { events: number; usPerFunction: Map<string, number> }> = {
  floor: { events: 0, usPerFunction: new Map() },
  split: { events: 0, usPerFunction: new Map() },
};

/** One pipeline run with Redis under `perf record` from the fast run's start to the paced run's. */
async function profiled(topology: "floor" | "split", round: number): Promise<void> {
  const output = join(dir, `${topology}-${round}.perf`);
  let perf: ChildProcess | undefined;
  const context: PipelineContext = {
    settings,
    redis,
    redisUrl: redisServer.url,
    redisPid,
    sinkPid: sink.process.pid!,
    dataDir: dir,
    sinkUrl: sink.info.url,
    log: (message) => {
      if (message.includes("as fast as it goes")) perf = spawn("perf", ["record", "-e", "cpu-clock", "-F", String(hz), "-p", String(redisPid), "-o", output], { stdio: "ignore" });
      if (message.includes("evenly paced")) perf?.kill("SIGINT");
    },
  };
  const result = await runPipeline(context, topology);
  if (perf && perf.exitCode === null && perf.signalCode === null) await once(perf, "exit");
  if (result.status !== "measured") throw new Error(`${topology}: ${result.reason}`);
  const events = result.throughput.delivered;
  totals[topology].events += events;
  for (const [name, samples] of samplesPerFunction(output)) {
    totals[topology].usPerFunction.set(name, (totals[topology].usPerFunction.get(name) ?? 0) + (samples * 1e6) / hz);
  }
  process.stdout.write(`round ${round} ${topology}: ${result.throughput.eventsPerSecond} events/s, ${events} delivered, Redis ${result.throughput.costPerEvent.redis?.cpuUs} µs CPU per event\n`);
}

/** perf's samples per function of Redis's own binary (others by library), unresolved addresses by the exported function before them. */
function samplesPerFunction(file: string): Map<string, number> {
  const text = execFileSync("perf", ["report", "-i", file, "--no-children", "--sort", "dso,symbol", "--stdio", "-n", "-g", "none"], { encoding: "utf8", maxBuffer: 64 << 20 });
  const counts = new Map<string, number>();
  for (const line of text.split("\n")) {
    const match = /^\s+[\d.]+%\s+(\d+)\s+(\S+)\s+\[.\]\s+(\S+)/.exec(line);
    if (!match) continue;
    const [, samples, dso, symbol] = match;
    const name = symbol!.startsWith("0x") && dso!.startsWith("redis") ? nearestExport(Number.parseInt(symbol!, 16)) : dso!.startsWith("redis") ? symbol! : `${dso}`;
    counts.set(name!, (counts.get(name!) ?? 0) + Number(samples));
  }
  return counts;
}

function exportedFunctions(binary: string): Array<[number, string]> {
  const text = execFileSync("nm", ["-D", "--defined-only", binary], { encoding: "utf8", maxBuffer: 64 << 20 });
  return text
    .split("\n")
    .map((line) => line.split(" "))
    .filter((parts) => parts.length === 3 && /[Tt]/.test(parts[1]!))
    .map(([address, , name]) => [Number.parseInt(address!, 16), name!] as [number, string])
    .sort((a, b) => a[0] - b[0]);
}

function nearestExport(address: number): string {
  let [low, high] = [0, exported.length - 1];
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (exported[middle]![0] <= address) low = middle;
    else high = middle - 1;
  }
  const [start, name] = exported[low]!;
  return `${name}+0x${((address - start) >> 8 << 8).toString(16)}`;
}

try {
  for (let round = 1; round <= rounds; round++) {
    await profiled("floor", round);
    await profiled("split", round);
  }
  const per = (topology: "floor" | "split", name: string) => (totals[topology].usPerFunction.get(name) ?? 0) / Math.max(1, totals[topology].events);
  const names = [...new Set([...totals.floor.usPerFunction.keys(), ...totals.split.usPerFunction.keys()])];
  const sum = (topology: "floor" | "split") => names.reduce((total, name) => total + per(topology, name), 0);
  process.stdout.write(`Redis CPU sampled per delivered event: floor ${sum("floor").toFixed(1)} µs, split ${sum("split").toFixed(1)} µs\n`);
  process.stdout.write("function: floor, split, split − floor (µs per delivered event), the 40 largest differences\n");
  for (const name of names.sort((a, b) => per("split", b) - per("floor", b) - (per("split", a) - per("floor", a))).slice(0, 40)) {
    process.stdout.write(`${name}: ${per("floor", name).toFixed(2)}, ${per("split", name).toFixed(2)}, ${(per("split", name) - per("floor", name)).toFixed(2)}\n`);
  }
} finally {
  redis.disconnect();
  await sink.stop();
  await redisServer.stop();
  await rm(dir, { recursive: true, force: true });
}
