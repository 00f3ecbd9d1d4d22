import type { Metric, Registry } from "prom-client";
import { createLabelSets, type ExportedMetric, type LabelValue } from "./label-sets.js";

export interface FastCounterConfig {
  name: string;
  help: string;
  labelNames?: readonly string[];
  registers: Registry[];
}

export interface FastCounter {
  readonly name: string;
  readonly help: string;
  readonly type: "counter";
  readonly aggregator: "sum";
  readonly labelNames: readonly string[];
  /** As prom-client's `inc`: `inc({ route: "crm" })`, `inc({ route: "crm" }, 2)`, `inc(2)`. */
  inc(labels?: Readonly<Record<string, LabelValue | undefined>> | number, value?: number): void;
  /** One label set, bound once: its `inc` is an addition (values in `labelNames` order). */
  labels(...values: LabelValue[]): { inc(value?: number): void };
  get(): Promise<ExportedMetric>;
  /** Every set back to 0; bound sets stay bound. */
  reset(): void;
}

/**
 * A counter for the per-event path: what prom-client's Counter exports, under the same
 * registry, without hashing and validating its labels on every increment (prom-client
 * does both on each call, bound or not: docs/benchmarks.md, "Metrics on the per-event
 * path"). Label names are checked where a set is named, as prom-client checks them.
 */
export function createFastCounter({ name, help, labelNames = [], registers }: FastCounterConfig): FastCounter {
  const add = (data: { value: number }, value: number) => {
    if (!Number.isFinite(value) || value < 0) throw new Error(`${name}: a counter only goes up by a finite amount, not ${value}`);
    data.value += value;
  };
  // Each set with its bound handle, made once.
  const sets = createLabelSets(name, labelNames, () => {
    const data = { value: 0, bound: { inc: (value = 1) => add(data, value) } };
    return data;
  });
  const counter: FastCounter = {
    name,
    help,
    type: "counter",
    aggregator: "sum",
    labelNames,
    inc(labels, value = 1) {
      if (typeof labels === "number") add(sets.named({}).data, labels);
      else add(sets.named(labels).data, value);
    },
    labels: (...values) => sets.of(values).data.bound,
    async get() {
      const values = [...sets.all()].map(({ labels, data }) => ({ labels, value: data.value }));
      return { name, help, type: "counter", aggregator: "sum", values };
    },
    reset() {
      for (const { data } of sets.all()) data.value = 0;
    },
  };
  for (const registry of registers) registry.registerMetric(counter as unknown as Metric);
  return counter;
}
