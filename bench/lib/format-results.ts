import type { BenchResults } from "../run.js";
import type { LoadResult } from "./load-types.js";

const n = (value: number | undefined, digits = 0) =>
  value === undefined ? "-" : value.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
const ms = (value: number | undefined) => (value === undefined ? "-" : `${n(value, 1)} ms`);
const mib = (bytes: number | undefined) => (bytes === undefined ? "-" : `${n(bytes / 1024 / 1024, 1)} MiB`);
const verdict = (met: boolean | undefined) => (met === undefined ? "pending" : met ? "met" : "**missed**");
const errors = (load: LoadResult) => `${n(load.errors)}${load.errors > 0 ? ` (${Object.entries(load.statusCodes).map(([code, count]) => `${code}: ${count}`).join(", ")})` : ""}`;

/** The Markdown table of one run (bench/results/latest.md, quoted in docs/benchmarks.md). */
export function formatResults(results: BenchResults): string {
  const { settings: s, machine } = results;
  const rows: string[][] = [];
  const ingest = results.ingest;
  if (ingest) {
    rows.push(["Ceiling: bare Express 5, 202", `${n(ingest.ceiling.requestsPerSecond)} req/s`, ms(ingest.ceiling.latencyMs.p50), ms(ingest.ceiling.latencyMs.p99), errors(ingest.ceiling), ""]);
    rows.push(["Ingest: 1 event/request", `${n(ingest.single.requestsPerSecond)} req/s (${n(ingest.ratioToCeiling, 2)} of ceiling)`, ms(ingest.single.latencyMs.p50), ms(ingest.single.latencyMs.p99), errors(ingest.single), `≥ 0.75 of ceiling, 0 errors: ${verdict(results.targets.ingestRatio)}`]);
    rows.push([`Ingest: ${s.BENCH_BATCH_SIZE} events/request`, `${n(ingest.batch.eventsPerSecond)} events/s (${n(ingest.batch.requestsPerSecond)} req/s)`, ms(ingest.batch.latencyMs.p50), ms(ingest.batch.latencyMs.p99), errors(ingest.batch), ""]);
    rows.push([`Ingest: fixed ${n(s.BENCH_FIXED_RATE)} req/s, autocannon overallRate (bursts)`, `${n(ingest.fixedRate.requestsPerSecond)} req/s`, ms(ingest.fixedRate.latencyMs.p50), ms(ingest.fixedRate.latencyMs.p99), errors(ingest.fixedRate), `p99 < 15 ms: ${verdict(results.targets.ackP99)}`]);
    rows.push([`Ingest: fixed ${n(s.BENCH_FIXED_RATE)} req/s, evenly paced`, `${n(ingest.fixedRatePaced.requestsPerSecond)} req/s`, ms(ingest.fixedRatePaced.latencyMs.p50), ms(ingest.fixedRatePaced.latencyMs.p99), errors(ingest.fixedRatePaced), `p99 < 15 ms: ${verdict(results.targets.ackP99Paced)}`]);
  }
  const pipeline = results.pipeline;
  if (pipeline?.status === "measured") {
    const t = pipeline.throughput;
    const f = pipeline.fixedRate;
    rows.push(["Pipeline: POST → sink, as fast as it goes", `${n(t.eventsPerSecond)} events/s (${n(t.delivered)} events in ${n(t.seconds, 1)} s)`, ms(t.endToEndMs.p50), ms(t.endToEndMs.p99), `${n(t.load.errors)}; lost ${n(t.lost)}`, `≥ 2,500 events/s, nothing lost: ${verdict(results.targets.pipeline)}`]);
    rows.push([`Pipeline: fixed ${n(s.BENCH_PIPELINE_RATE)} events/s evenly paced, end to end`, `${n(f.eventsPerSecond)} events/s`, ms(f.endToEndMs.p50), ms(f.endToEndMs.p99), `${n(f.load.errors)}; lost ${n(f.lost)}`, ""]);
  } else if (pipeline) {
    rows.push(["Pipeline", `pending: ${pipeline.reason}`, "-", "-", "-", "≥ 2,500 events/s: pending"]);
  }
  const reconcile = results.reconcile;
  if (reconcile?.status === "measured") {
    rows.push([`Reconcile: ${n(reconcile.ids)} ids, limit ${n(reconcile.allowedRate)}/s`, `${n(reconcile.callsPerSecond, 1)} calls/s (${n(reconcile.shareOfAllowed * 100, 0)} % of allowed)`, "-", "-", `${n(reconcile.failures)} failed; ${n(reconcile.rateLimited)} × 429`, `≥ 90 % of the allowed rate, no rate-limit failure: ${verdict(results.targets.reconcile)}`]);
  } else if (reconcile) {
    rows.push(["Reconcile", `pending: ${reconcile.reason}`, "-", "-", "-", "≥ 90 % of the allowed rate: pending"]);
  }

  const memory: string[] = [];
  if (ingest) {
    memory.push(`| Service peak RSS, receiver (ingest runs) | ${mib(ingest.service.peakRssBytes)} |`);
    memory.push(`| Redis memory per 100,000 stored events | ${mib(ingest.redis.bytesPer100kEvents)} (measured over ${n(ingest.redis.eventsStored)} events, extrapolated) |`);
  }
  if (pipeline?.status === "measured") memory.push(`| Service peak RSS, all roles (pipeline runs) | ${mib(pipeline.service.peakRssBytes)} |`);

  return [
    `| Scenario | Throughput | p50 | p99 | Errors | Target |`,
    `|---|---|---|---|---|---|`,
    ...rows.map((row) => `| ${row.join(" | ")} |`),
    "",
    ...(memory.length > 0 ? ["| Memory | |", "|---|---|", ...memory, ""] : []),
    `Run ${results.startedAt} on ${machine.cpus} × ${machine.cpuModel}, Node ${machine.node}, Redis ${machine.redis}, commit ${machine.commit}.`,
    `Load average (1 min) ${n(machine.loadBefore[0], 2)} before, ${n(machine.loadAfter[0], 2)} after: other work shared the machine when it is well above 0.`,
    `${s.BENCH_CONNECTIONS} connections, ${s.BENCH_DURATION_S} s per run after ${s.BENCH_WARMUP_S} s of warm-up. Load generator (autocannon, its own process), service, Redis (append-only file on, fsync every second) and sink share the ${machine.cpus} cores on one host, over loopback.`,
    `Latency columns: acknowledgement time for ingest rows; sink receive time minus send time for pipeline rows. Ingest runs the service with \`--role receiver\` (events are queued for one route, not delivered); pipeline runs \`--role all\` with one route${pipeline?.status === "measured" && pipeline.routeConcurrency !== "default" ? ` (concurrency ${pipeline.routeConcurrency})` : ""} to a node:http sink in its own process.`,
    "",
  ].join("\n");
}
