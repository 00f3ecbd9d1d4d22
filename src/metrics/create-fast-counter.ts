import type { Metric, Registry } from "prom-client";
import { createLabelSets, type FastMetric, type LabelValue } from "./create-label-sets.js";

export interface FastCounterConfig<Name extends string> {
  name: string;
  help: string;
  labelNames?: readonly Name[];
  registers: Registry[];
}

export interface FastCounter<Name extends string = string> extends FastMetric<Name> {
  readonly type: "counter";
  /** As prom-client's `inc`: `inc({ route: "crm" })`, `inc({ route: "crm" }, 2)`, `inc(2)`. */
  inc(labels?: Partial<Record<Name, LabelValue>> | number, value?: number): void;
  /** One label set, bound once: its `inc` is an addition (values in `labelNames` order). */
  labels(...values: LabelValue[]): { inc(value?: number): void };
  /** Every set back to 0; bound sets stay bound (and exported, at 0: prom-client drops them). */
  reset(): void;
}

/**
 * A counter for the per-event path: what prom-client's Counter exports, under the same
 * registry, without hashing and validating its labels on every increment (prom-client
 * does both on each call, bound or not: docs/benchmarks.md, "The webhook's way through
 * Express, and metrics on the per-event path"). Label names are checked where a set is
 * named, as prom-client checks them. Unlike prom-client's, a reset keeps each set at 0.
 */
export function createFastCounter<Name extends string>({ name, help, labelNames = [], registers }: FastCounterConfig<Name>): FastCounter<Name> {
  const add = (data: { value: number }, value: number) => {
    if (!Number.isFinite(value) || value < 0) throw new Error(`${name}: a counter only goes up by a finite amount, not ${value}`);
    data.value += value;
  };
  // Each set with its bound handle, made once.
  const sets = createLabelSets(name, labelNames, () => {
    const data = { value: 0, bound: { inc: (value = 1) => add(data, value) } };
    return data;
  });
  const counter: FastCounter<Name> = {
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
      const values = [...sets.all()].map(({ labels, data }) => ({ labels: { ...labels }, value: data.value }));
      return { name: counter.name, help, type: "counter", aggregator: "sum", values };
    },
    reset() {
      for (const { data } of sets.all()) data.value = 0;
    },
  };
  for (const registry of registers) registry.registerMetric(counter as unknown as Metric);
  return counter;
}
