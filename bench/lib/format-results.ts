import type { BenchResults } from "../run.js";
import type { FloorRatio } from "./floor-ratios.js";
import type { SeriesSummary, SoakResults } from "../scenarios/run-soak.js";
import type { LoadResult } from "./load-types.js";

const n = (value: number | undefined, digits = 0) =>
  value === undefined ? "-" : value.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
const ms = (value: number | undefined) => (value === undefined ? "-" : `${n(value, 1)} ms`);
const mib = (bytes: number | undefined, digits = 1) => (bytes === undefined ? "-" : `${n(bytes / 1024 / 1024, digits)} MiB`);
/** Redis in the soak: a few MiB, where a tenth of a MiB is a few per cent. */
const mib2 = (bytes: number | undefined) => mib(bytes, 2);
const verdict = (met: boolean | undefined) => (met === undefined ? "pending" : met ? "met" : "**missed**");
const errors = (load: LoadResult) =>
  `${n(load.errors)}${load.errors > 0 ? ` (${Object.entries(load.statusCodes).filter(([code]) => !code.startsWith("2")).map(([code, count]) => `${code}: ${count}`).join(", ") || "connection errors"})` : ""}`;
/** Cores each process kept busy during the run, e.g. `service 1.00 · redis 0.30 · load 0.25`. */
const cores = (load: LoadResult) =>
  Object.entries(load.cores)
    .sort(([a], [b]) => order(a) - order(b))
    .map(([name, value]) => `${name} ${n(value, 2)}`)
    .join(" · ");
/**
 * The same, with CPU microseconds per event for each process: cores busy over
 * events per second. It moves less than a rate on a shared machine.
 */
const coresPerEvent = (load: LoadResult, eventsPerSecond: number) =>
  Object.entries(load.cores)
    .sort(([a], [b]) => order(a) - order(b))
    .map(([name, value]) => (name === "other" || name === "load" ? `${name} ${n(value, 2)}` : `${name} ${n(value, 2)} (${n((value / eventsPerSecond) * 1e6)} µs/event)`))
    .join(" · ");
const order = (name: string) => ["ceiling", "floor", "service", "receiver", "worker", "redis", "sink", "load", "other"].indexOf(name);
const percent = (ratio: number) => `${n(ratio * 100, 1)} %`;
/** `first → last (min-max, spread, slope)` of a soak series. */
const series = (figure: SeriesSummary, unit: (value: number) => string) =>
  `${unit(figure.first)} → ${unit(figure.last)} (min ${unit(figure.min)}, max ${unit(figure.max)}, spread ${percent(figure.spread)}, slope ${figure.slopePerMinute >= 0 ? "+" : "−"}${unit(Math.abs(figure.slopePerMinute))}/min)`;
const topologyName = { all: "one `--role all` process", split: "`--role receiver` + `--role worker` processes", floor: "floor: Express + one BullMQ add, BullMQ worker + one POST, nothing else" };

/** The Markdown table of one run (bench/results/latest.md, quoted in docs/benchmarks.md). */
export function formatResults(results: BenchResults): string {
  const { settings: s, machine } = results;
  const rows: string[][] = [];
  const ingest = results.ingest;
  if (ingest) {
    const { ceiling, floor, single, batch, fixedRate, fixedRatePaced } = ingest;
    rows.push(["Ceiling: bare Express 5 answering 202", `${n(ceiling.requestsPerSecond)} req/s`, ms(ceiling.latencyMs.p50), ms(ceiling.latencyMs.p99), errors(ceiling), cores(ceiling), ""]);
    rows.push(["Floor: Express 5 + one BullMQ add per event, nothing else", `${n(floor.requestsPerSecond)} req/s = ${n(ingest.floorRatioToCeiling, 2)} × ceiling`, ms(floor.latencyMs.p50), ms(floor.latencyMs.p99), errors(floor), cores(floor), ""]);
    rows.push(["Ingest: 1 event per request", `${n(single.requestsPerSecond)} req/s = **${n(ingest.ratioToCeiling, 2)} × ceiling** = ${n(ingest.ratioToFloor, 2)} × floor`, ms(single.latencyMs.p50), ms(single.latencyMs.p99), errors(single), cores(single), `≥ 0.75 × ceiling, 0 errors: ${verdict(results.targets.ingestRatio)}`]);
    rows.push([`Ingest: ${s.BENCH_BATCH_SIZE} events per request (batch)`, `${n(batch.eventsPerSecond)} events/s (${n(batch.requestsPerSecond)} req/s)`, ms(batch.latencyMs.p50), ms(batch.latencyMs.p99), errors(batch), cores(batch), ""]);
    rows.push([`Ingest: ${n(s.BENCH_FIXED_RATE)} req/s, autocannon overallRate (bursts)`, `${n(fixedRate.requestsPerSecond)} req/s`, ms(fixedRate.latencyMs.p50), ms(fixedRate.latencyMs.p99), errors(fixedRate), cores(fixedRate), `p99 < 15 ms: ${verdict(results.targets.ackP99)}`]);
    rows.push([`Ingest: ${n(s.BENCH_FIXED_RATE)} req/s, evenly paced`, `${n(fixedRatePaced.requestsPerSecond)} req/s (the generator's own send lag: p99 ${ms(fixedRatePaced.sendLagMs?.p99)})`, ms(fixedRatePaced.latencyMs.p50), ms(fixedRatePaced.latencyMs.p99), errors(fixedRatePaced), cores(fixedRatePaced), `p99 < 15 ms: ${verdict(results.targets.ackP99Paced)}`]);
  }
  const rounds = Math.max(0, ...results.pipelines.map((pipeline) => pipeline.round));
  // The verdict is every round's: said once, on the last round's row.
  const pipelineTarget = (pipeline: BenchResults["pipelines"][number]) => {
    if (pipeline.topology === "floor") return pipeline.round === 1 ? "the stack's own bound for split" : "";
    if (pipeline.round !== rounds) return "";
    return `≥ 2,500 events/s, nothing lost${rounds > 1 ? ", every round" : ""}: ${verdict(results.targets.pipeline[pipeline.topology])}`;
  };
  for (const pipeline of results.pipelines) {
    const where = `${topologyName[pipeline.topology]}${rounds > 1 ? ` (round ${pipeline.round})` : ""}`;
    if (pipeline.status !== "measured") {
      rows.push([`Pipeline, ${where}`, `pending: ${pipeline.reason}`, "-", "-", "-", "-", "≥ 2,500 events/s: pending"]);
      continue;
    }
    const { throughput: t, fixedRate: f } = pipeline;
    // The floor keeps no ledger: its "stored" is what it acknowledged, so "lost" means nothing there.
    const lost = (run: typeof t) => (pipeline.topology === "floor" ? n(run.load.errors) : `${n(run.load.errors)}; lost ${n(run.lost)}${run.repeats > 0 ? `; ${n(run.repeats)} repeats` : ""}`);
    rows.push([`Pipeline, ${where}: POST → sink, as fast as it goes`, `**${n(t.eventsPerSecond)} events/s** (${n(t.delivered)} events in ${n(t.seconds, 1)} s)`, ms(t.endToEndMs.p50), ms(t.endToEndMs.p99), lost(t), coresPerEvent(t.load, t.eventsPerSecond), pipelineTarget(pipeline)]);
    rows.push([`Pipeline, ${where}: ${n(s.BENCH_PIPELINE_RATE)} events/s evenly paced`, `${n(f.eventsPerSecond)} events/s`, ms(f.endToEndMs.p50), ms(f.endToEndMs.p99), lost(f), coresPerEvent(f.load, f.eventsPerSecond), ""]);
  }
  const drain = results.workerDrain;
  if (drain) {
    const what = { service: "`--role worker`", floorPost: "floor: BullMQ worker + one POST per job, nothing else", floorNoop: "floor: BullMQ worker, processor does nothing" } as const;
    for (const [variant, run] of Object.entries(drain.runs) as Array<[keyof typeof what, (typeof drain.runs)["service"]]>) {
      const costs = Object.entries(run.costPerEvent).map(([name, cost]) => `${name} ${n(cost.cpuUs)} µs, ${n(cost.syscalls, 1)} syscalls`).join(" · ");
      rows.push([`Worker drain: ${n(drain.events)} queued deliveries, ${what[variant]}`, `${n(run.eventsPerSecond)} events/s`, "-", "-", "-", `per delivery: ${costs}`, variant === "service" ? `worker ≤ 200 µs CPU per delivery: ${verdict(results.targets.workerCpu)}` : ""]);
    }
  }
  const reconcile = results.reconcile;
  if (reconcile?.status === "measured") {
    const share = reconcile.rateShare ?? 1;
    rows.push([`Reconcile: ${n(reconcile.ids)} ids, tenant limit ${n(reconcile.allowedRate)} calls/s, default share ${n(share * 100)} %`, `${n(reconcile.callsPerSecond, 1)} calls/s = **${n(reconcile.shareOfAllowed * 100, 1)} %** of the limit`, "-", "-", `${n(reconcile.failures)} failed; ${n(reconcile.rateLimited)} × 429`, "-", `≥ 90 % of the share (${n(0.9 * share * 100)} % of the limit), no 429: ${verdict(results.targets.reconcile)}`]);
    const sweep = reconcile.sweep;
    if (sweep) {
      rows.push([`Sweep: ${n(reconcile.ids)} failed deliveries, no ids given`, `found and recovered in **${n(sweep.seconds, 1)} s**`, "-", "-", `${n(sweep.calls)} API calls (${n(sweep.listCalls)} list pages); ${n(sweep.rateLimited)} × 429`, "-", "-"]);
    }
  } else if (reconcile) {
    rows.push(["Reconcile", `pending: ${reconcile.reason}`, "-", "-", "-", "-", "≥ 90 % of the limit: pending"]);
  }
  const pace = results.reconcilePace;
  if (pace?.status === "measured") {
    const what = { bucket: "a bucket that refills continuously", window: "a window that refills at the end of each second", quota: "a per-client quota tighter than the share", "other client": "another client spending the other half" } as const;
    for (const shape of pace.shapes) {
      const other = shape.otherPerSecond === undefined ? "" : `; the other client ${n(shape.otherPerSecond, 1)} calls/s`;
      rows.push([
        `Reconcile pace, ${what[shape.shape]}: ${n(shape.ids)} ids, tenant limit ${n(pace.limit)} calls/s, target ${n(shape.target)} calls/s`,
        `${n(shape.callsPerSecond, 1)} calls/s = **${n(shape.shareOfTarget * 100, 1)} %** of the target${other}`,
        "-",
        "-",
        `${n(shape.failures)} not recovered; ${n(shape.rateLimited)} × 429 of ${n(shape.calls + shape.rateLimited)} calls`,
        shape.pace ? `the service's pace at the end: ${shape.pace.perSecond === undefined ? "-" : `${n(shape.pace.perSecond, 1)} calls/s (${shape.pace.limit})`}, ${n(shape.pace.cuts)} cuts` : "-",
        shape === pace.shapes[0] ? `each shape ≥ 90 % of its target, ≤ 1 % 429: ${verdict(results.targets.reconcilePace)}` : "",
      ]);
    }
  } else if (pace) {
    rows.push(["Reconcile pace", `pending: ${pace.reason}`, "-", "-", "-", "-", "-"]);
  }
  const guard = results.staleGuard;
  if (guard?.status === "measured") {
    const { plain: p, guarded: g } = guard;
    rows.push([
      `dropStale guard: ${n(guard.events)} deliveries, each of its own user, one \`--role worker\``,
      `${n(g.eventsPerSecond)} events/s (plain route ${n(p.eventsPerSecond)})`,
      "-",
      "-",
      "-",
      `worker CPU ${n(g.workerCpuUs)} µs per delivery (plain ${n(p.workerCpuUs)}, **+${n(g.workerCpuUs - p.workerCpuUs)}**); Redis ${n(g.redisScripts, 1)} scripts (plain ${n(p.redisScripts, 1)}, **+${n(g.redisScripts - p.redisScripts, 1)} round trips**, one before the POST), ${n(g.redisCpuUs)} µs of Redis CPU (plain ${n(p.redisCpuUs)})`,
      "",
    ]);
  } else if (guard) {
    rows.push(["dropStale guard", `pending: ${guard.reason}`, "-", "-", "-", "-", ""]);
  }

  const flood = results.flood;
  if (flood?.status === "measured") {
    const { alone, withFlood } = flood;
    const shape = `live ${n(flood.liveRate)}/s for ${n(flood.liveSeconds)} s, downstream ${n(flood.downstreamMs)} ms, concurrency ${n(flood.concurrency)}`;
    rows.push([`Live delivery, alone (${shape})`, `${n(alone.live)} live events`, ms(alone.latencyMs.p50), ms(alone.latencyMs.p99), "-", "-", ""]);
    rows.push([
      `Live delivery, ${n(flood.floodEvents)} day-old events stored just before (the late lane)`,
      `${n(withFlood.live)} live events; ${n(withFlood.lateWaitingAtEnd)} late still waiting at the end; flood drained in ${flood.floodDrainedS === undefined ? "(not within 5 min)" : `${n(flood.floodDrainedS, 1)} s`}; ${n(flood.lost)} lost`,
      ms(withFlood.latencyMs.p50),
      ms(withFlood.latencyMs.p99),
      "-",
      "-",
      `p99 ≤ 2 × alone (${flood.ratio === undefined ? "-" : `${n(flood.ratio, 2)} ×`}), nothing lost: ${withFlood.lateWaitingAtEnd > 0 ? verdict(results.targets.flood) : "not judged: the flood drained before the live phase ended (raise BENCH_FLOOD_EVENTS)"}`,
    ]);
  } else if (flood) {
    rows.push(["Live delivery with a flood", `pending: ${flood.reason}`, "-", "-", "-", "-", ""]);
  }

  const shape = results.routeShape;
  if (shape) {
    for (const { round, plain, shaped } of shape.rounds) {
      for (const [label, run] of [["plain route", plain], ["route with filter, testEvents drop and transform", shaped]] as const) {
        const what = `Pipeline, one \`--role all\` process, round ${round}, ${label}: POST → sink, as fast as it goes`;
        if (run.status !== "measured") {
          rows.push([what, `pending: ${run.reason}`, "-", "-", "-", "-", ""]);
          continue;
        }
        const t = run.throughput;
        const last = label !== "plain route" && round === shape.rounds.length;
        const target = last ? `service CPU per delivered event ≤ +10 % (shaped ÷ plain, medians: ${n(shape.ratio, 3)}), nothing lost: ${verdict(results.targets.routeShapeCost)}` : "";
        rows.push([what, `${n(t.eventsPerSecond)} events/s; service **${n(t.costPerEvent.service?.cpuUs)} µs CPU per delivered event**`, ms(t.endToEndMs.p50), ms(t.endToEndMs.p99), `${n(t.load.errors)}; lost ${n(t.lost)}`, coresPerEvent(t.load, t.eventsPerSecond), target]);
      }
    }
  }

  const view = results.operatorView;
  if (view?.status === "measured") {
    rows.push([
      `Operator view: GET /admin/overview, ${n(view.routes)} routes, a day of freshness history (${n(view.sketchFieldsPerKey)} fields per hash)`,
      `p50 ${ms(view.overview.p50Ms)}, **p99 ${ms(view.overview.p99Ms)}**, max ${ms(view.overview.maxMs)} (${n(view.overview.requests)} in a row); 5 pages polling every 0.5 s: p99 ${ms(view.overviewConcurrent.p99Ms)}; while the service delivers 10,000 events ${ms(view.duringDeliveriesMs)}; page files p99 ${ms(view.pageFiles.p99Ms)}`,
      "-",
      "-",
      "0",
      `${n(view.overviewBytes / 1024, 1)} KiB per answer`,
      `every request < 200 ms: ${verdict(results.targets.operatorView)}`,
    ]);
  } else if (view) {
    rows.push(["Operator view", `pending: ${view.reason}`, "-", "-", "-", "-", "every request < 200 ms: pending"]);
  }

  const outage = results.outage;
  if (outage) {
    rows.push([
      `Downstream outage: 503 for ${n(outage.outageSeconds, 0)} s, ${n(outage.events)} events arriving meanwhile`,
      `**${n(outage.requestsDuringOutage)} requests** reached the downstream during the outage; after it: first delivery ${n(outage.recoveryToFirstDeliverySeconds, 1)} s, last ${n(outage.recoveryToLastDeliverySeconds, 1)} s`,
      "-",
      "-",
      `${n(outage.events - outage.delivered)} not delivered; ${n(outage.deadLetters)} dead letters`,
      "-",
      "",
    ]);
  }

  const soak = results.soak;
  if (soak?.status === "measured") {
    const { load } = soak;
    rows.push([
      `Soak, \`--role receiver\` + \`--role worker\`: ${n(soak.rate)} events/s evenly paced for ${n(soak.durationS)} s after ${n(soak.warmupS)} s of warm-up, default settings`,
      `${n(soak.deliveredPerSecond)} events/s delivered, ${n(load.eventsPerSecond)} acknowledged: ${soak.paceKept ? "pace kept" : `**pace not kept** (under 95 % of ${n(soak.rate)})`} (the generator's own send lag: p99 ${ms(load.sendLagMs?.p99)})`,
      ms(soak.endToEndMs.p50),
      ms(soak.endToEndMs.p99),
      `${errors(load)}; lost ${n(soak.lost)}${soak.repeats > 0 ? `; ${n(soak.repeats)} repeats` : ""}`,
      coresPerEvent(load, soak.deliveredPerSecond),
      `memory flat within 10 % after warm-up (\`used_memory\` less the ledger: ${percent(soak.usedMemoryLessLedger.spread)}), nothing lost, pace kept: ${verdict(results.targets.soak)}`,
    ]);
  } else if (soak) {
    rows.push(["Soak", `pending: ${soak.reason}`, "-", "-", "-", "-", "memory flat within 10 %: pending"]);
  }

  const stored = results.archive;
  if (stored) {
    rows.push(["Archive: bytes on disk per archived `user.updated` (heap, TOAST, every index, its one delivered attempt)", `${n(stored.bytesPerEvent)} B`, "-", "-", "-", "-", `≤ 600 B: ${verdict(results.targets.archiveBytesPerEvent)}`]);
    rows.push([`Archive: search by entity over ${n(stored.searchRows)} archived events`, `writer ${n(stored.writerEventsPerSecond)} events/s`, `${n(stored.searchByEntityP50Ms, 1)} ms`, `${n(stored.searchByEntityP99Ms, 1)} ms`, "-", "-", `p99 ≤ 50 ms: ${verdict(results.targets.archiveSearchP99)}`]);
  }
  const archive = results.archivePipeline;
  if (archive) {
    for (const { round, off, on, ingest, totalCpuUs, archive: held } of archive.rounds) {
      for (const [label, run] of [["off", off], ["on", on]] as const) {
        if (run.status !== "measured") {
          rows.push([`Round ${round}, split pipeline, ARCHIVE=${label}`, `pending: ${run.reason}`, "-", "-", "-", "-", ""]);
          continue;
        }
        const t = run.throughput;
        const costs = Object.entries(t.costPerEvent).filter(([name]) => name !== "sink").map(([name, cost]) => `${name} ${n(cost.cpuUs)}`).join(", ");
        const deliveries = held.deliveries ? `; deliveries kept in their event's row ${n(held.deliveries.inEventRow)}, as rows of their own ${n(held.deliveries.ownRow)}` : "";
        const kept = label === "on" ? `; archived ${n(held.archived)} of ${n(held.stored)} when the sink had them all, ${n(held.inOutbox)} in the outbox${deliveries}` : "";
        rows.push([`Round ${round}, split pipeline, ARCHIVE=${label}: POST → sink, as fast as it goes`, `**${n(t.eventsPerSecond)} events/s**; CPU µs per delivered event: ${costs}; total ${n(totalCpuUs[label])}`, ms(t.endToEndMs.p50), ms(t.endToEndMs.p99), `${n(t.load.errors)}; lost ${n(t.lost)}${kept}`, coresPerEvent(t.load, t.eventsPerSecond), ""]);
      }
      for (const [label, load] of [["the floor server", ingest.floor], ["`--role receiver`, ARCHIVE=off", ingest.off], ["`--role receiver`, ARCHIVE=on", ingest.on]] as const) {
        rows.push([`Round ${round}, ingest, ${label}: single events`, `${n(load.requestsPerSecond)} requests/s`, ms(load.latencyMs.p50), ms(load.latencyMs.p99), n(load.errors), coresPerEvent(load, load.eventsPerSecond), ""]);
      }
    }
    const { eventsPerSecond, cpuPerEvent, ingestOnToFloor, ingestOffToFloor } = archive.ratios;
    rows.push([
      "The archive's cost, medians of the rounds",
      `pipeline events/s on ÷ off **${n(eventsPerSecond, 3)}**; CPU per delivered event on ÷ off **${n(cpuPerEvent, 3)}**; ingest on ÷ floor **${n(ingestOnToFloor, 3)}** (off ÷ floor ${n(ingestOffToFloor, 3)})`,
      "-", "-", "-", "-",
      `events/s ≥ 0.9, CPU ≤ 1.11, ingest ≥ 0.9 × floor, nothing lost: ${verdict(results.targets.archivePipelineCost)}`,
    ]);
    const { stored, complete } = archive.archived;
    rows.push(["Archive after a last ARCHIVE=on run", `${n(complete)} of ${n(stored)} stored events archived once the outbox drained`, "-", "-", "-", "-", "archive complete"]);
    const replay = archive.replay;
    if ("status" in replay) rows.push(["Replay to the sink", `pending: ${replay.reason}`, "-", "-", "-", "-", ""]);
    else rows.push([`Replay of ${n(replay.matched)} archived events to a route added afterwards (the sink)`, `**${n(replay.eventsPerSecond)} events/s** (${n(replay.delivered)} delivered in ${n(replay.seconds, 1)} s; all queued after ${n(replay.queuedSeconds, 1)} s)`, "-", "-", `${n(replay.failed)} failed`, "-", ""]);
  }

  const memory: string[] = [];
  if (ingest) {
    memory.push(`| Service peak RSS, \`--role receiver\` (ingest runs) | ${mib(ingest.service.peakRssBytes)} |`);
    memory.push(`| Redis \`used_memory\` per 100,000 stored events | ${mib(ingest.redis.bytesPer100kEvents)} (${n(ingest.redis.eventsStored)} events stored, extrapolated linearly; one route, so each event is a job hash of ~${n(ingest.redis.sampleKeyBytes.job)} B and a ledger share of ~${n(ingest.redis.sampleKeyBytes.ledger)} B plus list and index entries) |`);
    const { aofRewrites, latestForkMs } = ingest.redis.rewrites;
    memory.push(`| Redis append-only-file rewrites during the ingest runs | ${n(aofRewrites)}${aofRewrites > 0 ? ` (the last fork paused Redis ${n(latestForkMs, 1)} ms)` : ""} |`);
  }
  const bytes = results.memory;
  if (bytes) {
    memory.push(`| Redis per delivered event once its job is gone: the ledger over the dedupe window (${n(bytes.events)} events, \`used_memory\` less AOF and client buffers) | **${n(bytes.bytesPerEventLedger, 1)} B** (target ≤ 48 B) |`);
    memory.push(`| Redis per job (one route, a user.updated event, \`used_memory\` given back when removed) | ${n(bytes.bytesPerJob, 1)} B |`);
  }
  for (const pipeline of results.pipelines) {
    if (pipeline.status !== "measured") continue;
    for (const [name, bytes] of Object.entries(pipeline.peakRssBytes)) memory.push(`| Service peak RSS, \`--role ${name}\` (pipeline runs, ${pipeline.topology}) | ${mib(bytes)} |`);
  }

  if (soak?.status === "measured") {
    memory.push(`| Soak: Redis \`used_memory\` (less AOF and client buffers), sampled every ${n(s.BENCH_SOAK_SAMPLE_S)} s | ${series(soak.usedMemory, mib2)}; ${n(soak.usedMemoryPerNewEvent, 1)} B per event stored meanwhile |`);
    memory.push(`| Soak: the ledger's keys (\`MEMORY USAGE\`), the dedupe window: grows with every new id by design | ${series(soak.ledgerBytes, mib2)}; ${n(soak.ledgerBytesPerNewEvent, 1)} B per event stored meanwhile; deleting them at the end gave back ${n(soak.ledgerShareOfMemoryUsage, 3)} × their \`MEMORY USAGE\` of \`used_memory\` |`);
    memory.push(`| Soak: **\`used_memory\` less the ledger** (its \`MEMORY USAGE\` × ${n(soak.ledgerShareOfMemoryUsage, 3)}; what the target is judged on) | ${series(soak.usedMemoryLessLedger, mib2)} |`);
    memory.push(`| Soak: every other key (\`MEMORY USAGE\`: jobs, BullMQ's lists, sets and events stream) | ${series(soak.otherKeysBytes, mib2)} |`);
    for (const [name, rss] of Object.entries(soak.rssBytes)) memory.push(`| Soak: RSS, \`--role ${name}\` | ${series(rss, mib)}; peak ${mib(soak.peakRssBytes[name])} |`);
  }

  return [
    `| Scenario | Throughput | p50 | p99 | Errors | Cores busy | Target |`,
    `|---|---|---|---|---|---|---|`,
    ...rows.map((row) => `| ${row.join(" | ")} |`),
    "",
    ...floorTable(results.floorRatios ?? []),
    ...(memory.length > 0 ? ["| Memory | |", "|---|---|", ...memory, ""] : []),
    `- Run ${results.startedAt} on ${machine.cpus} × ${machine.cpuModel}, Node ${machine.node}, Redis ${machine.redis}, commit ${machine.commit}.`,
    `- **One host, ${machine.cpus} cores shared** by the load generator (its own process), the service, Redis (append-only file, fsync every second) and the sink, over loopback. Other work before the run: ${n(machine.busyCoresBefore, 2)} cores busy over 3 s (≈ 0 when the machine is quiet); load average (1 min) ${n(machine.loadBefore[0], 2)} before, ${n(machine.loadAfter[0], 2)} after (both count the build and the bench's own processes).`,
    `- ${s.BENCH_CONNECTIONS} connections, ${s.BENCH_DURATION_S} s per measured run after ${s.BENCH_WARMUP_S} s of warm-up; real-shaped \`user.updated\` events with unique ids, basic auth.`,
    `- Latency: acknowledgement time (ingest rows; paced runs count from each request's due time), sink receive time minus send time (pipeline rows). autocannon's overallRate sends each connection's share of a second back to back, so its rate runs are bursts of ${s.BENCH_CONNECTIONS} concurrent requests.`,
    `- Ingest runs \`--role receiver\` with one route (events are stored and queued, not delivered). Pipeline runs one route (${s.BENCH_ROUTE_CONCURRENCY ? `\`concurrency: ${s.BENCH_ROUTE_CONCURRENCY}\`` : "`DOWNSTREAM_URL`, default concurrency 10"}) to a node:http sink in its own process; "lost" is stored minus delivered.`,
    ...results.pipelines.flatMap((pipeline) =>
      pipeline.status === "measured" && pipeline.throughput.redisCallsPerEvent
        ? [
            `- Per delivered event, pipeline ${pipeline.topology} as fast as it goes, from its start until the sink had every event: ${Object.entries(pipeline.throughput.costPerEvent ?? {}).map(([name, cost]) => `${name} ${n(cost.cpuUs)} µs CPU and ${n(cost.syscalls, 1)} read/write system calls`).join("; ")}.`,
            `- Redis commands per delivered event, same run, with the µs Redis spent in them (a script's µs include its commands'): ${Object.entries(pipeline.throughput.redisCallsPerEvent).map(([command, cost]) => `${command} ${n(cost.calls, 2)} (${n(cost.usec, 1)} µs)`).join(", ")}.`,
          ]
        : [],
    ),
    `- Cores busy: CPU seconds over wall seconds per process during the measured run (sum ≤ ${machine.cpus}); "other" is the rest of the machine (the bench runner, other people's work): well above 0.05, the run shared the cores.`,
    ...(soak?.status === "measured" ? ["", ...soakDetails(soak)] : []),
    "",
  ].join("\n");
}

/** Ours over the floor's in the same run (floor-ratios.ts): each round, the median and its verdict. */
function floorTable(ratios: FloorRatio[]): string[] {
  if (ratios.length === 0) return [];
  return [
    "| Against the stack's floor, same run | each round | median | target |",
    "|---|---|---|---|",
    ...ratios.map((ratio) => `| ${ratio.figure} | ${ratio.perRound.map((value) => n(value, 2)).join(", ")} | **${n(ratio.median, 2)} ×** | ${ratio.target}: ${verdict(ratio.met)} |`),
    "",
  ];
}

/**
 * The soak's samples, and which key shapes grew: the ledger by design, anything else is
 * what the "flat" target is about.
 */
function soakDetails(soak: Extract<SoakResults, { status: "measured" }>): string[] {
  const { samples } = soak;
  const names = Object.keys(soak.rssBytes);
  const lines = [
    `Soak samples (seconds after the warm-up; "stored" is the ledger's ids, every event since the warm-up began; "backlog" stored minus delivered):`,
    "",
    `| s | \`used_memory\` | ledger keys | \`used_memory\` less ledger | other keys | stored | delivered | backlog | ${names.map((name) => `RSS ${name}`).join(" | ")} |`,
    `|${"---|".repeat(8 + names.length)}`,
    ...samples.map((sample) =>
      `| ${n(sample.atS, 1)} | ${mib2(sample.usedMemory)} | ${mib2(sample.ledgerBytes)} | ${mib2(sample.usedMemoryLessLedger)} | ${mib2(sample.otherKeysBytes)} | ${n(sample.stored)} | ${n(sample.delivered)} | ${n(sample.stored - sample.delivered)} | ${names.map((name) => mib(sample.rssBytes[name])).join(" | ")} |`,
    ),
    "",
  ];
  const [first, last] = [samples[0]!, samples.at(-1)!];
  const shapes = [...new Set([...Object.keys(first.keyShapes), ...Object.keys(last.keyShapes)])];
  const none = { keys: 0, bytes: 0 };
  const growth = shapes
    .map((shape) => ({ shape, from: first.keyShapes[shape] ?? none, to: last.keyShapes[shape] ?? none }))
    .sort((a, b) => Math.abs(b.to.bytes - b.from.bytes) - Math.abs(a.to.bytes - a.from.bytes))
    .slice(0, 12);
  lines.push(
    "Soak: `MEMORY USAGE` by key shape, first sample → last (ids, shards and buckets as `*`; the 12 that moved most):",
    "",
    "| key shape | keys | bytes | change |",
    "|---|---|---|---|",
    ...growth.map(({ shape, from, to }) => `| \`${shape}\` | ${n(from.keys)} → ${n(to.keys)} | ${mib2(from.bytes)} → ${mib2(to.bytes)} | ${to.bytes >= from.bytes ? "+" : "−"}${n(Math.abs(to.bytes - from.bytes) / 1024, 1)} KiB |`),
  );
  return lines;
}
