/**
 * A delivery's metric updates (dispatch_duration's timer, dispatch_total, delivery_lag),
 * with prom-client's Counter and Histogram as the service used them and with the service's
 * own (metrics/create-fast-*.ts), alternating in one process: CPU µs per delivery.
 *   node --import tsx bench/metrics-cost.ts [updates per round] [rounds]
 */
import { Counter, Histogram, Registry } from "prom-client";
import { createFastCounter } from "../src/metrics/create-fast-counter.js";
import { createFastHistogram } from "../src/metrics/create-fast-histogram.js";
import { median } from "./lib/percentile.js";

const [perRound = 200_000, rounds = 7] = process.argv.slice(2).map(Number);
const buckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

function promClient(): () => void {
  const registers = [new Registry()];
  const duration = new Histogram({ name: "d", help: "d", labelNames: ["route"], buckets, registers });
  const total = new Counter({ name: "t", help: "t", labelNames: ["route", "outcome"], registers });
  const lag = new Histogram({ name: "l", help: "l", labelNames: ["route", "origin"], buckets, registers });
  const labels = { route: "default" };
  return () => {
    duration.startTimer(labels)();
    total.inc({ ...labels, outcome: "delivered" });
    lag.observe({ route: "default", origin: "webhook" }, 0.0123);
  };
}

function ours(): () => void {
  const registers = [new Registry()];
  const duration = createFastHistogram({ name: "d", help: "d", labelNames: ["route"], buckets, registers }).labels("default");
  const delivered = createFastCounter({ name: "t", help: "t", labelNames: ["route", "outcome"], registers }).labels("default", "delivered");
  const lag = createFastHistogram({ name: "l", help: "l", labelNames: ["route", "origin"], buckets, registers });
  return () => {
    duration.startTimer()();
    delivered.inc();
    lag.labels("default", "webhook").observe(0.0123);
  };
}

const variants = { "prom-client": promClient(), ours: ours() };
const figures: Record<string, number[]> = { "prom-client": [], ours: [] };
for (let round = 1; round <= rounds; round++) {
  for (const [name, update] of Object.entries(variants)) {
    const started = process.cpuUsage();
    for (let i = 0; i < perRound; i++) update();
    const used = process.cpuUsage(started);
    figures[name]!.push((used.user + used.system) / perRound);
  }
}
// The first round runs while the JIT is still at work: left out of the medians.
for (const [name, values] of Object.entries(figures)) {
  process.stdout.write(`${name}: median ${median(values.slice(1)).toFixed(2)} µs per delivery (${values.map((value) => value.toFixed(2)).join(", ")})\n`);
}
