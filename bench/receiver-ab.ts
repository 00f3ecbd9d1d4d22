/**
 * Two builds of the receiver beside the floor server, alternating, CPU per request: for a
 * change to the ingest path too small for `npm run bench`'s spread (docs/benchmarks.md).
 *   node --import tsx bench/receiver-ab.ts <dist-a> <dist-b> [rounds]
 * Each a build's output directory (`npm run build` writes dist/; copy it aside before the
 * change). Its own redis-server (append-only file on, as the bench); per round the floor,
 * then A and B in turn (B first in every other round), each warmed up for 2 s and loaded
 * for 10 s at 50 connections with single events. Prints each process's CPU µs per request
 * (its cores busy over the requests per second) and the ratio to that round's floor.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startRedisServer } from "../src/redis/redis-server.js";
import { abBuilds } from "./lib/ab-builds.js";
import { runLoad } from "./lib/run-load.js";
import { startChild, tsxArgs } from "./lib/start-child.js";
import { benchAuthorization, startServiceProcess } from "./lib/start-service-process.js";
import { median } from "./lib/percentile.js";

const builds = abBuilds("receiver-ab.ts");
const dir = await mkdtemp(join(tmpdir(), "sk-receiver-ab-"));
const redis = await startRedisServer({ dir: join(dir, "redis"), appendOnly: true });
const streamId = "est_38ANnv8pQhqsZrX2VFbftv";
const floorScript = fileURLToPath(new URL("./processes/floor-server.ts", import.meta.url));
const figures: Record<string, number[]> = { floor: [], a: [], b: [] };

/** CPU µs per request of the process named `name`, after a 2 s warm-up. */
async function cpuPerRequest(url: string, name: string, pid: number): Promise<number> {
  const load = (durationS: number) => runLoad({ url: `${url}/webhooks/${streamId}`, connections: 50, durationS, batchSize: 1, authorization: benchAuthorization, streamId, watch: { [name]: pid } });
  await load(2);
  const result = await load(10);
  if (result.errors > 0 || result.ok === 0) throw new Error(`${name}: ${result.errors} errors, ${result.ok} answered 2xx`);
  return Math.round((result.cores[name]! * 1e6) / result.requestsPerSecond);
}

try {
  for (let round = 1; round <= builds.rounds; round++) {
    const floor = await startChild<{ url: string }>(tsxArgs(floorScript, [redis.url, `floor-${round}`]));
    figures.floor!.push(await cpuPerRequest(floor.info.url, "floor", floor.process.pid!).finally(() => floor.stop()));
    for (const build of builds.order(round)) {
      const service = await startServiceProcess({ role: "receiver", redisUrl: redis.url, queuePrefix: `${build}-${round}`, dataDir: dir, env: { DOWNSTREAM_URL: "http://127.0.0.1:9/" }, entry: builds.entry(build) });
      figures[build]!.push(await cpuPerRequest(service.publicUrl, build, service.pid).finally(() => service.stop()));
    }
    const [f, a, b] = [figures.floor!.at(-1)!, figures.a!.at(-1)!, figures.b!.at(-1)!];
    process.stdout.write(`round ${round}: floor ${f} µs, A ${a} µs (${(a / f).toFixed(2)} ×), B ${b} µs (${(b / f).toFixed(2)} ×) CPU per request\n`);
  }
  process.stdout.write(`medians: floor ${median(figures.floor!)} µs, A ${median(figures.a!)} µs, B ${median(figures.b!)} µs CPU per request\n`);
} finally {
  await redis.stop();
  await rm(dir, { recursive: true, force: true });
}
