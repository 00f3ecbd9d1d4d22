/** A label's value as prom-client takes it. */
export type LabelValue = string | number;

/** A metric as prom-client's registry reads it (`get()`), for its text and JSON. */
export interface ExportedMetric {
  name: string;
  help: string;
  type: "counter" | "histogram";
  aggregator: "sum";
  values: Array<{ labels: Record<string, LabelValue>; value: number; metricName?: string }>;
}

/** What a metric made here shows prom-client's registry, which reads it as one of its own. */
export interface FastMetric<Name extends string> {
  /** Mutable as prom-client's metrics': its registry renames a counter for OpenMetrics. */
  name: string;
  readonly help: string;
  readonly aggregator: "sum";
  readonly labelNames: readonly Name[];
  get(): Promise<ExportedMetric>;
  reset(): void;
}

export interface LabelSet<Data> {
  /** The set's labels, in the metric's label order, as exported. */
  labels: Record<string, LabelValue>;
  /** What the metric keeps for it. */
  data: Data;
}

export interface LabelSets<Data> {
  /** The set of these values, in `labelNames` order: made on first use. */
  of(values: readonly LabelValue[]): LabelSet<Data>;
  /** The set named as prom-client names one, `{ route: "crm" }`: any of `labelNames`, no other. */
  named(labels: Readonly<Record<string, LabelValue | undefined>> | undefined): LabelSet<Data>;
  all(): IterableIterator<LabelSet<Data>>;
}

/**
 * A metric's label sets (create-fast-counter.ts, create-fast-histogram.ts), each kept
 * once under its values, with what the metric counts for it. Every value is bounded by
 * the callers (docs/operating.md#metrics), so sets are never dropped.
 */
export function createLabelSets<Data>(metric: string, labelNames: readonly string[], fresh: () => Data): LabelSets<Data> {
  const sets = new Map<string, LabelSet<Data>>();
  const of = (values: readonly (LabelValue | undefined)[]): LabelSet<Data> => {
    const key = values.length === 1 ? String(values[0]) : values.join("\u0000");
    let set = sets.get(key);
    if (set) return set;
    if (values.length !== labelNames.length) throw new Error(`${metric}: give ${labelNames.length} label values (${labelNames.join(", ") || "none"}), not ${values.length}`);
    const labels: Record<string, LabelValue> = {};
    labelNames.forEach((name, index) => {
      if (values[index] !== undefined) labels[name] = values[index];
    });
    set = { labels, data: fresh() };
    sets.set(key, set);
    return set;
  };
  // Without label names, the one set is there from the start: it reads 0 (or empty) before
  // its first update, as prom-client's.
  if (labelNames.length === 0) of([]);
  return {
    of,
    named(labels = {}) {
      for (const name of Object.keys(labels)) {
        if (!labelNames.includes(name)) throw new Error(`${metric} has no label ${name}; its labels: ${labelNames.join(", ") || "none"}`);
      }
      return of(labelNames.map((name) => labels[name]));
    },
    all: () => sets.values(),
  };
}
