import type { Metric, Registry } from "prom-client";
import { createLabelSets, type ExportedMetric, type FastMetric, type LabelValue } from "./create-label-sets.js";

export interface FastHistogramConfig<Name extends string> {
  name: string;
  help: string;
  labelNames?: readonly Name[];
  /** Upper bounds, ascending (`+Inf` is added). */
  buckets: readonly number[];
  registers: Registry[];
}

/** One label set's observations, bound once. */
export interface BoundHistogram {
  observe(value: number): void;
  /** Observes the seconds from now until the returned function is called, and returns them. */
  startTimer(): () => number;
}

export interface FastHistogram<Name extends string = string> extends FastMetric<Name> {
  readonly type: "histogram";
  /** As prom-client's `observe`: `observe({ route: "crm" }, 0.2)`, or `observe(0.2)` without labels. */
  observe(labels: Partial<Record<Name, LabelValue>> | number, value?: number): void;
  /** One label set, bound once (values in `labelNames` order). */
  labels(...values: LabelValue[]): BoundHistogram;
  /** Every set back to no observations; bound sets stay bound (and exported, empty: prom-client drops them). */
  reset(): void;
}

/** One label set's observations, with its bound handle (made once). */
interface Observations {
  /** Per upper bound, the observations at or below it and above the one before. */
  counts: number[];
  sum: number;
  count: number;
  bound: BoundHistogram;
}

/**
 * A histogram for the per-event path: what prom-client's Histogram exports (cumulative
 * `_bucket` series with `le`, `_sum`, `_count`), under the same registry, without
 * hashing and validating its labels and converting each bound to a property name on
 * every observation, as prom-client does (docs/benchmarks.md, "The webhook's way through
 * Express, and metrics on the per-event path"). Unlike prom-client's, a reset keeps each
 * set, empty.
 */
export function createFastHistogram<Name extends string>({ name, help, labelNames = [], buckets, registers }: FastHistogramConfig<Name>): FastHistogram<Name> {
  if (labelNames.some((label) => label === "le")) throw new Error(`${name}: le is the histogram's own label (its buckets' bounds); name the label otherwise`);
  if (buckets.some((bound, index) => index > 0 && bound <= buckets[index - 1]!)) throw new Error(`${name}: give the buckets' upper bounds in ascending order`);
  const add = (data: Observations, value: number) => {
    if (!Number.isFinite(value)) throw new Error(`${name}: observe a finite number, not ${value}`);
    let index = 0;
    while (index < buckets.length && value > buckets[index]!) index++;
    if (index < buckets.length) data.counts[index]! += 1;
    data.sum += value;
    data.count += 1;
  };
  const fresh = (): Observations => {
    const data: Observations = {
      counts: buckets.map(() => 0),
      sum: 0,
      count: 0,
      bound: {
        observe: (value) => add(data, value),
        startTimer() {
          const started = performance.now();
          return () => {
            const seconds = (performance.now() - started) / 1000;
            add(data, seconds);
            return seconds;
          };
        },
      },
    };
    return data;
  };
  const sets = createLabelSets(name, labelNames, fresh);
  const histogram: FastHistogram<Name> = {
    name,
    help,
    type: "histogram",
    aggregator: "sum",
    labelNames,
    observe(labels, value) {
      if (typeof labels === "number") add(sets.named({}).data, labels);
      else add(sets.named(labels).data, value ?? Number.NaN);
    },
    labels: (...values) => sets.of(values).data.bound,
    async get() {
      const values: ExportedMetric["values"] = [];
      for (const { labels, data } of sets.all()) {
        let below = 0;
        buckets.forEach((le, index) => {
          below += data.counts[index]!;
          values.push({ labels: { le, ...labels }, value: below, metricName: `${name}_bucket` });
        });
        values.push(
          { labels: { le: "+Inf", ...labels }, value: data.count, metricName: `${name}_bucket` },
          { labels: { ...labels }, value: data.sum, metricName: `${name}_sum` },
          { labels: { ...labels }, value: data.count, metricName: `${name}_count` },
        );
      }
      return { name: histogram.name, help, type: "histogram", aggregator: "sum", values };
    },
    reset() {
      for (const { data } of sets.all()) {
        data.counts.fill(0);
        data.sum = 0;
        data.count = 0;
      }
    },
  };
  for (const registry of registers) registry.registerMetric(histogram as unknown as Metric);
  return histogram;
}
