/**
 * What a route's filter and transform cost per event, in this process, beside the plain
 * route's body:
 *   nice -n 5 node --import tsx bench/route-shape-cost.ts [events] [rounds] [concurrency] [kept]
 * Each event is a ~1 KB `user.updated` (event-source.ts) stored as the job's JSON text, so
 * every variant starts, as the worker does, from BullMQ's JSON.parse of it (`job parse`
 * alone is that common part). The route is the route-shape scenario's (run-route-shape.ts).
 * Variants run one after another in each round, `concurrency` events in flight at a time;
 * the first round runs cold (the JIT) and is left out of the medians. Also printed: the
 * young-generation collections per 1,000 events, the garbage each variant leaves. `kept`
 * (default 0) holds each round's last that many parsed jobs alive, as a busy service holds
 * its jobs, requests and buffers in flight: each collection then copies them (in the runs
 * made so far this did not bring jsonata's cost near the pipeline's).
 * In-process figures, not the pipeline's (docs/benchmarks.md, "What a filter and a
 * transform cost").
 */
import jsonata from "jsonata";
import { PerformanceObserver } from "node:perf_hooks";
import { createBodyShaper } from "../src/dispatch/shape-body.js";
import { wholeEvent, type DeliveryJobData } from "../src/queue/delivery-job.js";
import { createRouteChooser } from "../src/routes/route-chooser.js";
import { TransformError } from "../src/routes/route-transform.js";
import type { Route } from "../src/routes/route.js";
import { createEventSource } from "./lib/event-source.js";
import { median } from "./lib/percentile.js";
import { shapedRoute } from "./scenarios/run-route-shape.js";

const [events = 20_000, rounds = 6, concurrency = 1, kept = 0] = process.argv.slice(2).map(Number);
const source = createEventSource();
const jobTexts = Array.from({ length: events }, () => JSON.stringify({ event: source.event("es_bench"), origin: "webhook", receivedAt: Date.now() }));
const timeoutMs = 100;

const plain = createBodyShaper({}, timeoutMs);
const shaped = createBodyShaper({ transform: shapedRoute.transform }, timeoutMs);
const chooser = createRouteChooser([{ name: "crm", match: ["*"], filter: shapedRoute.filter, testEvents: shapedRoute.testEvents } as unknown as Route]);
// Before: every transform through jsonata, with its guardrails as route-transform.ts sets them; and without them.
const guarded = jsonata(shapedRoute.transform, { timeout: timeoutMs, stack: 1000 });
const unguarded = jsonata(shapedRoute.transform);
// A run past the time limit is counted, not thrown: on a loaded machine a pause of the process counts against it too.
let timedOut = 0;
const viaJsonata = (expression: jsonata.Expression) => async (data: DeliveryJobData) => {
  try {
    return { body: JSON.stringify(await expression.evaluate(wholeEvent(data))) };
  } catch (error) {
    if ((error as { code?: string }).code !== "D1012") throw error;
    timedOut++;
  }
};
const filter = (data: DeliveryJobData) => chooser.narrow!(data.event, ["crm"]);
// The same transform in parentheses (a block): no object of paths, so jsonata evaluates it, as
// it does every other expression, with the route's own handling of its time limit.
const shapedViaJsonata = createBodyShaper({ transform: `(${shapedRoute.transform})` }, timeoutMs);
let pastTime = 0;
const countingPastTime = (data: DeliveryJobData) =>
  (shapedViaJsonata(data) as Promise<unknown>).catch((error: unknown) => {
    if (!(error instanceof TransformError && error.message.startsWith("ran past"))) throw error;
    pastTime++;
  });

// Each variant is one route's work for one event: the filter at fan-out (none, or the
// scenario's with testEvents: drop), then the body it sends.
const variants: Record<string, (data: DeliveryJobData) => unknown> = {
  "job parse only": () => undefined,
  plain,
  "filter only": (data) => (filter(data), plain(data)),
  "transform only, jsonata (before)": viaJsonata(guarded),
  "transform only, jsonata unguarded": viaJsonata(unguarded),
  "transform only (now)": shaped,
  "transform only, any other expression (now)": countingPastTime,
  "filter + transform, jsonata (before)": (data) => (filter(data), viaJsonata(guarded)(data)),
  "filter + transform (now)": (data) => (filter(data), shaped(data)),
};

let collections = 0;
new PerformanceObserver((list) => (collections += list.getEntries().length)).observe({ entryTypes: ["gc"] });
const perEvent = new Map<string, number[]>();
const garbage = new Map<string, number[]>();
const inFlight: unknown[] = new Array(kept);
for (let round = 1; round <= rounds; round++) {
  for (const [name, run] of Object.entries(variants)) {
    const collectionsBefore = collections;
    const before = process.cpuUsage();
    for (let index = 0; index < events; index += concurrency) {
      const batch: unknown[] = [];
      for (let next = index; next < Math.min(index + concurrency, events); next++) {
        const data = JSON.parse(jobTexts[next]!) as DeliveryJobData;
        if (kept > 0) inFlight[next % kept] = data;
        batch.push(run(data));
      }
      await Promise.all(batch);
    }
    const cpu = process.cpuUsage(before);
    // The observer is told some ticks after the fact: let it catch up before reading.
    await new Promise((resolve) => setTimeout(resolve, 50));
    if (round === 1) continue;
    perEvent.set(name, [...(perEvent.get(name) ?? []), (cpu.user + cpu.system) / events]);
    garbage.set(name, [...(garbage.get(name) ?? []), ((collections - collectionsBefore) * 1000) / events]);
  }
}
const plainUs = median(perEvent.get("plain")!);
process.stdout.write(`${events} events a round, ${rounds} rounds (the first left out), ${concurrency} in flight, ${kept} parsed jobs kept; µs CPU per event (medians, each round's in brackets)\n`);
for (const [name, values] of perEvent) {
  const us = median(values);
  const overPlain = `${us - plainUs >= 0 ? "+" : ""}${(us - plainUs).toFixed(1)}`;
  process.stdout.write(`${name.padEnd(44)} ${us.toFixed(1).padStart(5)} µs  ${overPlain.padStart(6)} over plain  ${median(garbage.get(name)!).toFixed(2)} collections per 1,000 events  (${values.map((value) => value.toFixed(1)).join(", ")})\n`);
}
process.stdout.write(`past ${timeoutMs} ms: jsonata with its guardrails alone ${timedOut} times (wall time: pauses of the process count), the route's transform through jsonata ${pastTime} times\n`);
