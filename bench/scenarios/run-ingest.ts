import type { Redis } from "ioredis";
import { deliveryQueueBullPrefix, deliveryQueueName, ledgerKeyPattern } from "../../src/queue/queue-names.js";
import type { BenchSettings } from "../bench-settings.js";
import type { LoadOptions, LoadResult } from "../lib/load-types.js";
import { countLedgerIds, rewriteFigures, usedMemory } from "../lib/redis-figures.js";
import { runLoad } from "../lib/run-load.js";
import { startChild, tsxArgs } from "../lib/start-child.js";
import { benchAuthorization, startServiceProcess } from "../lib/start-service-process.js";

export interface IngestResults {
  ceiling: LoadResult;
  /** Express + one BullMQ add per event, nothing else: what a durable acknowledgement costs by itself */
  floor: LoadResult;
  single: LoadResult;
  batch: LoadResult;
  /** autocannon `overallRate`: bursts of `connections` requests at the start of each second */
  fixedRate: LoadResult;
  /** the same rate evenly spaced */
  fixedRatePaced: LoadResult;
  /** single-event requests/s of the service over those of the bare Express ceiling */
  ratioToCeiling: number;
  /** the same for the floor: how close the stack's own cost comes to the ceiling */
  floorRatioToCeiling: number;
  /** the service over the floor: what our own work (auth, validation, dedupe, metrics) costs on top */
  ratioToFloor: number;
  service: { role: "receiver"; peakRssBytes?: number };
  redis: {
    eventsStored: number;
    usedMemoryBefore: number;
    usedMemoryAfter: number;
    bytesPer100kEvents: number;
    /** MEMORY USAGE of one stored event's keys: its ledger hash and its delivery job hash */
    sampleKeyBytes: { ledger?: number; job?: number };
    /** append-only-file rewrites during the ingest runs: each forks Redis, a pause that shows in the p99 */
    rewrites: Awaited<ReturnType<typeof rewriteFigures>>;
  };
}

export interface IngestContext {
  settings: BenchSettings;
  redis: Redis;
  redisUrl: string;
  redisPid: number;
  dataDir: string;
  /** where the service's route points (it only queues here: no worker runs) */
  downstreamUrl: string;
  cpuProfileDir?: string;
  log(message: string): void;
}

const streamId = "est_38ANnv8pQhqsZrX2VFbftv";
const ceilingScript = new URL("../processes/ceiling-server.ts", import.meta.url).pathname;
const floorScript = new URL("../processes/floor-server.ts", import.meta.url).pathname;

/**
 * Ingest: the bare Express ceiling, the floor (Express + one BullMQ add: the least a
 * durable acknowledgement costs with this stack), then the receiver (`--role receiver`, one route, so
 * each event is checked, queued and claimed in Redis exactly as in production) with the
 * same requests, connections and duration: single events as fast as they go, batches,
 * and a fixed rate for the acknowledgement latency. Redis memory is read before and
 * after, over the events the runs stored.
 */
export async function runIngest(context: IngestContext): Promise<IngestResults> {
  const { settings, log } = context;
  const load = (url: string, overrides: Partial<LoadOptions> = {}, watch: Record<string, number> = {}): LoadOptions => ({
    url: `${url}/webhooks/${streamId}`,
    connections: settings.BENCH_CONNECTIONS,
    durationS: settings.BENCH_DURATION_S,
    batchSize: 1,
    authorization: benchAuthorization,
    streamId,
    watch,
    ...overrides,
  });
  const warmUp = async (url: string) => {
    if (settings.BENCH_WARMUP_S > 0) await runLoad(load(url, { durationS: settings.BENCH_WARMUP_S }));
  };

  /** A reference server in its own process, warmed up, then loaded as the service will be. */
  const measureReference = async (name: "ceiling" | "floor", args: string[], watch: Record<string, number> = {}) => {
    const server = await startChild<{ url: string }>(args);
    try {
      await warmUp(server.info.url);
      return await runLoad(load(server.info.url, {}, { [name]: server.process.pid!, ...watch }));
    } finally {
      await server.stop();
    }
  };
  log("ingest: ceiling (bare Express 5, 202)");
  const ceiling = await measureReference("ceiling", tsxArgs(ceilingScript));
  log("ingest: floor (Express 5 + one BullMQ add per event)");
  const floor = await measureReference("floor", tsxArgs(floorScript, [context.redisUrl, "bench-floor"]), { redis: context.redisPid });

  await context.redis.flushall();
  const queuePrefix = "bench-ingest";
  const service = await startServiceProcess({
    role: "receiver",
    redisUrl: context.redisUrl,
    queuePrefix,
    dataDir: context.dataDir,
    env: { DOWNSTREAM_URL: context.downstreamUrl },
    cpuProfileDir: context.cpuProfileDir,
  });
  try {
    const watch = { service: service.pid, redis: context.redisPid };
    const usedMemoryBefore = await usedMemory(context.redis);
    await warmUp(service.publicUrl);
    log("ingest: single events");
    const single = await runLoad(load(service.publicUrl, {}, watch));
    log(`ingest: batches of ${settings.BENCH_BATCH_SIZE}`);
    const batch = await runLoad(load(service.publicUrl, { batchSize: settings.BENCH_BATCH_SIZE }, watch));
    log(`ingest: fixed rate ${settings.BENCH_FIXED_RATE} requests/s (autocannon overallRate, then evenly paced)`);
    const fixedRate = await runLoad(load(service.publicUrl, { overallRate: settings.BENCH_FIXED_RATE }, watch));
    const fixedRatePaced = await runLoad(load(service.publicUrl, { overallRate: settings.BENCH_FIXED_RATE, paced: true }, watch));
    const eventsStored = await countLedgerIds(context.redis, queuePrefix);
    const usedMemoryAfter = await usedMemory(context.redis);
    const sampleKeyBytes = await sampleEventKeys(context.redis, queuePrefix);
    const rewrites = await rewriteFigures(context.redis);
    return {
      ceiling,
      floor,
      single,
      batch,
      fixedRate,
      fixedRatePaced,
      ratioToCeiling: ratio(single, ceiling),
      floorRatioToCeiling: ratio(floor, ceiling),
      ratioToFloor: ratio(single, floor),
      service: { role: "receiver", peakRssBytes: service.peakRssBytes() },
      redis: {
        eventsStored,
        usedMemoryBefore,
        usedMemoryAfter,
        bytesPer100kEvents: eventsStored > 0 ? Math.round(((usedMemoryAfter - usedMemoryBefore) / eventsStored) * 100_000) : 0,
        sampleKeyBytes,
        rewrites,
      },
    };
  } finally {
    await service.stop();
  }
}

const ratio = (a: LoadResult, b: LoadResult) => Math.round((a.requestsPerSecond / b.requestsPerSecond) * 1000) / 1000;

/**
 * Where the bytes of an event go: its share of a ledger bucket (the bucket and its name
 * dictionary over the ids it holds) and its job hash (one route), averaged over up to 20 of each.
 */
async function sampleEventKeys(redis: Redis, queuePrefix: string): Promise<{ ledger?: number; job?: number }> {
  // SAMPLES 0: count every field; the default samples 5 and misjudges hashes of mixed field sizes.
  const usage = async (key: string) => ((await redis.call("MEMORY", "USAGE", key, "SAMPLES", "0")) as number | null) ?? 0;
  const average = (values: number[]) => (values.length === 0 ? undefined : Math.round(values.reduce((sum, value) => sum + value, 0) / values.length));
  const [, ledgerKeys] = await redis.scan("0", "MATCH", ledgerKeyPattern(queuePrefix), "COUNT", 1000);
  const buckets = ledgerKeys.filter((key) => !key.endsWith(":names")).slice(0, 20);
  const perId = await Promise.all(
    buckets.map(async (key) => ((await usage(key)) + (await usage(`${key}:names`))) / Math.max(1, await redis.hlen(key))),
  );
  const queueKeys = `${deliveryQueueBullPrefix(queuePrefix, "default")}:${deliveryQueueName("default")}:`;
  const [, candidates] = await redis.scan("0", "MATCH", `${queueKeys}*`, "COUNT", 1000);
  // A job is a hash named by its id alone; BullMQ's other keys (meta, events, wait, ...) are not jobs.
  const jobs: string[] = [];
  for (const key of candidates) {
    if (jobs.length >= 20) break;
    if (!key.slice(queueKeys.length).includes(":") && key !== `${queueKeys}meta` && (await redis.type(key)) === "hash") jobs.push(key);
  }
  return { ledger: average(perId), job: average(await Promise.all(jobs.map(usage))) };
}
