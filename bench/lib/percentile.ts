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
