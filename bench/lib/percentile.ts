/** The p-th percentile (0-100) of the values, nearest-rank; undefined for no values. */
export function percentile(values: ArrayLike<number>, p: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = Float64Array.from(values).sort();
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}

/** Rounds for the results file: two decimals are plenty for milliseconds and rates. */
export function round(value: number | undefined, decimals = 2): number | undefined {
  if (value === undefined || !Number.isFinite(value)) return undefined;
  const factor = 10 ** decimals;
  return Math.round(value * factor) / factor;
}

/** The middle value, or the mean of the two middle ones for an even count: the medians of a few rounds. */
export function median(values: number[]): number {
  if (values.length === 0) throw new Error("the median of no values");
  if (!values.every(Number.isFinite)) throw new Error(`the median of values that are not all finite numbers: ${values.join(", ")}`);
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}
