import type { Redis } from "ioredis";
import { createSinkProbe } from "../lib/create-sink-probe.js";
import type { LoadOptions, LoadResult } from "../lib/load-types.js";
import { ledgerKeyPattern } from "../../src/queue/queue-names.js";
import { countLedgerIds, deleteKeys, memoryByKeyShape, usedMemoryForData, type KeyShapeMemory } from "../lib/redis-figures.js";
import { runLoad } from "../lib/run-load.js";
import { rssBytes } from "../lib/start-child.js";
import { benchAuthorization, startServiceProcess, type ServiceProcess } from "../lib/start-service-process.js";
import type { SinkStats } from "../processes/sink-server.js";
import type { PipelineContext } from "./run-pipeline.js";

/** One look at Redis and the service processes during the measured run. */
export interface SoakSample {
  /** seconds since the warm-up ended */
  atS: number;
  /** `used_memory` less the AOF and client buffers (usedMemoryForData) */
  usedMemory: number;
  /** `MEMORY USAGE` of the ledger's keys: the dedupe window, which grows with every new id by design */
  ledgerBytes: number;
  /** `usedMemory` less the ledger's share of it (`ledgerBytes` × `ledgerShareOfMemoryUsage`): what the target is judged on */
  usedMemoryLessLedger: number;
  /** `MEMORY USAGE` of every other key (jobs, BullMQ's lists, sets and events stream, ...) */
  otherKeysBytes: number;
  /** ids in the ledger: every event stored since the scenario began */
  stored: number;
  /** distinct ids the sink has had since the scenario began */
  delivered: number;
  /** current RSS per service process */
  rssBytes: Record<string, number | undefined>;
  /** `MEMORY USAGE` by key shape (memoryByKeyShape) */
  keyShapes: Record<string, KeyShapeMemory>;
  /** how long taking this sample took: its SCAN and MEMORY USAGE calls load Redis meanwhile */
  tookMs: number;
}

/** First, last, extremes, (max - min) / min and the least-squares slope of one figure over the samples. */
export interface SeriesSummary {
  first: number;
  last: number;
  min: number;
  max: number;
  spread: number;
  slopePerMinute: number;
}

export type SoakResults =
  | {
      status: "measured";
      rate: number;
      warmupS: number;
      durationS: number;
      load: LoadResult;
      /** distinct events the sink got during the measured run, per second of it */
      deliveredPerSecond: number;
      /** acknowledged and delivered each at 95 % of `rate` or more: else the machine could not keep the rate, and the figures hold for less */
      paceKept: boolean;
      /** stored minus delivered once the sink had every event or the drain timed out: must be 0 */
      lost: number;
      stored: number;
      repeats: number;
      endToEndMs: SinkStats["window"]["latencyMs"];
      samples: SoakSample[];
      usedMemory: SeriesSummary;
      usedMemoryLessLedger: SeriesSummary;
      otherKeysBytes: SeriesSummary;
      ledgerBytes: SeriesSummary;
      /** `used_memory` growth over the measured run per event stored in it: the ledger's ~35 B if nothing else grows */
      usedMemoryPerNewEvent: number;
      /** the same for the ledger's `MEMORY USAGE` */
      ledgerBytesPerNewEvent: number;
      /**
       * What deleting the ledger's keys at the end gave back of `used_memory`, over their
       * `MEMORY USAGE`: the allocator's size classes and the keyspace's entries, which
       * `MEMORY USAGE` leaves out; each sample's ledger `MEMORY USAGE` is scaled by it.
       */
      ledgerShareOfMemoryUsage: number;
      rssBytes: Record<string, SeriesSummary>;
      peakRssBytes: Record<string, number | undefined>;
    }
  | { status: "pending"; reason: string };

/** The same processes and settings as a pipeline run. */
export type SoakContext = PipelineContext;

const streamId = "est_38ANnv8pQhqsZrX2VFbftv";
const queuePrefix = "bench-soak";

/**
 * Soak: does Redis stay flat under a sustained rate? The built service as a `--role
 * receiver` and a `--role worker` process with every setting at its default (completed
 * jobs kept by count and age, BullMQ's events stream capped, the dedupe ledger) and one
 * route to the sink. After a paced warm-up long enough for the completed-job retention
 * to fill, the paced load runs on while Redis and each process's RSS are sampled every
 * BENCH_SOAK_SAMPLE_S; then the bench waits for the sink to have every stored event.
 * The ledger grows with every new id for the dedupe window by design (~35 B an event),
 * so the flatness is judged on `used_memory` less the ledger's keys, and both are kept.
 */
export async function runSoak(context: SoakContext): Promise<SoakResults> {
  const { settings, log, redis } = context;
  const rate = settings.BENCH_SOAK_RATE;
  await redis.flushall();
  const start = (role: "receiver" | "worker") =>
    startServiceProcess({ role, redisUrl: context.redisUrl, queuePrefix, dataDir: context.dataDir, env: { DOWNSTREAM_URL: `${context.sinkUrl}/deliver` }, cpuProfileDir: context.cpuProfileDir });
  const processes: Record<string, ServiceProcess> = {};
  try {
    processes.receiver = await start("receiver");
    processes.worker = await start("worker");
    const sink = createSinkProbe(context.sinkUrl);
    const stored = () => countLedgerIds(redis, queuePrefix);
    const load = (durationS: number, watch?: Record<string, number>): LoadOptions => ({
      url: `${processes.receiver!.publicUrl}/webhooks/${streamId}`,
      connections: settings.BENCH_CONNECTIONS,
      durationS,
      overallRate: rate,
      paced: true,
      batchSize: 1,
      authorization: benchAuthorization,
      streamId,
      watch,
    });

    await sink.reset();
    log(`soak: ${rate} events/s for ${settings.BENCH_SOAK_WARMUP_S} s of warm-up`);
    await runLoad(load(Math.max(1, settings.BENCH_SOAK_WARMUP_S)));
    if (!(await sink.until(1, 10_000))) return { status: "pending", reason: "no event reached the sink within 10 s: this build does not dispatch yet" };

    log(`soak: ${rate} events/s for ${settings.BENCH_SOAK_S} s, Redis sampled every ${settings.BENCH_SOAK_SAMPLE_S} s`);
    await sink.mark();
    const sampler = startSampler(async (atS): Promise<RawSample> => {
      const began = performance.now();
      const [usedMemory, keyShapes, ledgerIds, sinkStats] = await Promise.all([usedMemoryForData(redis), memoryByKeyShape(redis), stored(), sink.stats()]);
      const sum = (ledger: boolean) => Object.entries(keyShapes).reduce((total, [shape, { bytes }]) => (isLedger(shape) === ledger ? total + bytes : total), 0);
      const ledgerBytes = sum(true);
      const rss = Object.fromEntries(Object.entries(processes).map(([name, service]) => [name, rssBytes(service.pid)]));
      return { atS, usedMemory, ledgerBytes, otherKeysBytes: sum(false), stored: ledgerIds, delivered: sinkStats.unique, rssBytes: rss, keyShapes, tookMs: Math.round(performance.now() - began) };
    }, settings.BENCH_SOAK_SAMPLE_S * 1000);
    const watch = { receiver: processes.receiver.pid, worker: processes.worker.pid, redis: context.redisPid, sink: context.sinkPid };
    const measured = await runLoad(load(settings.BENCH_SOAK_S, watch));
    const rawSamples = await sampler.stop();
    const window = (await sink.stats()).window;

    await sink.untilAllOf(stored, settings.BENCH_DRAIN_TIMEOUT_S * 1000);
    const after = await sink.stats();
    const storedAtEnd = await stored();
    const ledgerShare = await ledgerShareOfMemoryUsage(redis);
    const samples = rawSamples.map((sample) => ({ ...sample, usedMemoryLessLedger: sample.usedMemory - Math.round(sample.ledgerBytes * ledgerShare) }));
    const [first, last] = [samples[0]!, samples.at(-1)!];
    const series = (figure: (sample: SoakSample) => number) => summarize(samples.map((sample) => [sample.atS, figure(sample)]));
    const newEvents = last.stored - first.stored;
    const deliveredPerSecond = Math.round(window.unique / measured.durationS);
    return {
      status: "measured",
      rate,
      warmupS: settings.BENCH_SOAK_WARMUP_S,
      durationS: settings.BENCH_SOAK_S,
      load: measured,
      deliveredPerSecond,
      paceKept: measured.eventsPerSecond >= 0.95 * rate && deliveredPerSecond >= 0.95 * rate,
      lost: storedAtEnd - after.unique,
      stored: storedAtEnd,
      repeats: after.repeats,
      endToEndMs: window.latencyMs,
      samples,
      usedMemory: series((sample) => sample.usedMemory),
      usedMemoryLessLedger: series((sample) => sample.usedMemoryLessLedger),
      otherKeysBytes: series((sample) => sample.otherKeysBytes),
      ledgerBytes: series((sample) => sample.ledgerBytes),
      usedMemoryPerNewEvent: newEvents > 0 ? round1((last.usedMemory - first.usedMemory) / newEvents) : 0,
      ledgerBytesPerNewEvent: newEvents > 0 ? round1((last.ledgerBytes - first.ledgerBytes) / newEvents) : 0,
      ledgerShareOfMemoryUsage: Math.round(ledgerShare * 1000) / 1000,
      rssBytes: Object.fromEntries(Object.keys(processes).map((name) => [name, series((sample) => sample.rssBytes[name] ?? 0)])),
      peakRssBytes: Object.fromEntries(Object.entries(processes).map(([name, service]) => [name, service.peakRssBytes()])),
    };
  } finally {
    for (const service of Object.values(processes)) await service.stop();
  }
}

type RawSample = Omit<SoakSample, "usedMemoryLessLedger">;

const isLedger = (shape: string) => shape.startsWith(ledgerKeyPattern(queuePrefix).slice(0, -1));

/**
 * `used_memory` the ledger holds per byte of its keys' `MEMORY USAGE`, measured by
 * deleting them (the run's last step: nothing reads the ledger after it). `MEMORY USAGE`
 * counts a listpack's own bytes, not the allocator's size class it sits in, nor the
 * keyspace's and expiry table's entries; left out, ~10 % of the ledger's growth would
 * read as growth of everything else.
 */
async function ledgerShareOfMemoryUsage(redis: Redis): Promise<number> {
  const before = await usedMemoryForData(redis);
  const shapes = await memoryByKeyShape(redis);
  const ledgerBytes = Object.entries(shapes).reduce((total, [shape, { bytes }]) => (isLedger(shape) ? total + bytes : total), 0);
  await deleteKeys(redis, ledgerKeyPattern(queuePrefix));
  const after = await usedMemoryForData(redis);
  return ledgerBytes > 0 ? (before - after) / ledgerBytes : 1;
}

/**
 * Takes a sample at once and then every `intervalMs` (never two at a time: a slow one
 * delays the next), and a last one at `stop()`.
 */
function startSampler(take: (atS: number) => Promise<RawSample>, intervalMs: number) {
  const startedAt = performance.now();
  const elapsedS = () => Math.round((performance.now() - startedAt) / 100) / 10;
  const samples: RawSample[] = [];
  let stopped = false;
  let wake = () => {};
  const loop = (async () => {
    for (let index = 1; !stopped; index += 1) {
      samples.push(await take(elapsedS()));
      const waitMs = intervalMs * index - (performance.now() - startedAt);
      if (stopped || waitMs <= 0) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, waitMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  })();
  return {
    async stop(): Promise<RawSample[]> {
      stopped = true;
      wake();
      await loop;
      samples.push(await take(elapsedS()));
      return samples;
    },
  };
}

function summarize(points: Array<[number, number]>): SeriesSummary {
  const values = points.map(([, value]) => value);
  const [min, max] = [Math.min(...values), Math.max(...values)];
  const meanX = points.reduce((sum, [x]) => sum + x, 0) / points.length;
  const meanY = values.reduce((sum, y) => sum + y, 0) / points.length;
  const covariance = points.reduce((sum, [x, y]) => sum + (x - meanX) * (y - meanY), 0);
  const variance = points.reduce((sum, [x]) => sum + (x - meanX) ** 2, 0);
  return {
    first: values[0]!,
    last: values.at(-1)!,
    min,
    max,
    spread: min > 0 ? Math.round(((max - min) / min) * 1000) / 1000 : 0,
    slopePerMinute: variance > 0 ? Math.round((covariance / variance) * 60) : 0,
  };
}

function round1(value: number): number {
  return Math.round(value * 10) / 10;
}
