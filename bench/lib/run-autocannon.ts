import autocannon from "autocannon";
import { startCpuMeter } from "./cpu-usage.js";
import { createEventSource } from "./event-source.js";
import type { LoadOptions, LoadResult } from "./load-types.js";
import { percentile, round } from "./percentile.js";

/**
 * One autocannon run. Each request gets fresh event ids through `setupRequest`
 * (autocannon's `idReplacement` breaks Content-Length, docs/libraries.md#installing). Latencies are
 * the raw response times (fractional ms) of every 2xx, recorded here because
 * autocannon's own histogram keeps whole milliseconds.
 */
export async function runAutocannon(options: LoadOptions): Promise<LoadResult> {
  const source = createEventSource();
  const batch = options.batchSize > 1;
  const latencies: number[] = [];
  const statusCodes: Record<string, number> = {};
  let ok = 0;
  let failures = 0;
  const startedAt = Date.now();
  const meter = startCpuMeter({ load: process.pid, ...options.watch });
  const instance = autocannon({
    url: options.url,
    method: "POST",
    connections: options.connections,
    duration: options.durationS,
    ...(options.overallRate ? { overallRate: options.overallRate } : {}),
    headers: headersFor(options),
    requests: [
      {
        setupRequest: (request) => ({
          ...request,
          body: batch
            ? JSON.stringify(Array.from({ length: options.batchSize }, () => source.event(options.streamId)))
            : JSON.stringify(source.event(options.streamId)),
        }),
      },
    ],
  });
  instance.on("response", (_client: unknown, statusCode: number, _bytes: number, responseTimeMs: number) => {
    statusCodes[statusCode] = (statusCodes[statusCode] ?? 0) + 1;
    if (statusCode >= 200 && statusCode < 300) {
      ok += 1;
      latencies.push(responseTimeMs);
    }
  });
  instance.on("reqError", () => (failures += 1));
  const result = await instance;
  const finishedAt = Date.now();
  const cores = meter.read();
  return summarize({ generator: "autocannon", options, durationS: result.duration, statusCodes, ok, failures: failures + result.timeouts, latencies, startedAt, finishedAt, cores });
}

export function headersFor(options: LoadOptions): Record<string, string> {
  return {
    "content-type": options.batchSize > 1 ? "application/cloudevents-batch+json" : "application/json",
    ...(options.authorization ? { authorization: options.authorization } : {}),
  };
}

export function summarize(run: {
  generator: LoadResult["generator"];
  options: LoadOptions;
  durationS: number;
  statusCodes: Record<string, number>;
  ok: number;
  failures: number;
  latencies: number[];
  startedAt: number;
  finishedAt: number;
  cores: Record<string, number>;
}): LoadResult {
  const { durationS, statusCodes, ok, latencies } = run;
  const responses = Object.values(statusCodes).reduce((sum, count) => sum + count, 0);
  return {
    generator: run.generator,
    durationS,
    responses,
    ok,
    errors: responses - ok + run.failures,
    statusCodes,
    requestsPerSecond: round(responses / durationS)!,
    eventsPerSecond: round((ok * run.options.batchSize) / durationS)!,
    eventsAcknowledged: ok * run.options.batchSize,
    latencyMs: { p50: round(percentile(latencies, 50)), p99: round(percentile(latencies, 99)), max: round(percentile(latencies, 100)) },
    startedAt: run.startedAt,
    finishedAt: run.finishedAt,
    cores: run.cores,
  };
}
