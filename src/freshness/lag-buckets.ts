/**
 * The freshness sketch's buckets (docs/operating.md, "Freshness"): a delivery lag falls in
 * bucket `i` when it is at most `2^(i/4)` ms and more than the bucket below, so each
 * bucket is 19% wider than the one before and a quantile read back from the counts is
 * within 10% of the true one, from 1 ms to beyond a day in about 110 buckets. Counts per
 * bucket add up across processes and minutes, which a list of percentiles would not.
 */
const perDoubling = 4;

/** The last bucket: every lag of 2^28 ms (3.1 days) or more. */
export const lastBucket = 28 * perDoubling;

/** The bucket of a lag in milliseconds; 0 for a lag of 1 ms or less (also a negative one, an event dated in the future by a skewed clock). */
export function bucketOf(lagMs: number): number {
  if (!(lagMs > 1)) return 0;
  return Math.min(lastBucket, Math.ceil(Math.log2(lagMs) * perDoubling - 1e-9));
}

/** The upper bound of a bucket, in milliseconds. */
export function bucketUpperMs(bucket: number): number {
  return 2 ** (bucket / perDoubling);
}

/**
 * The `q` quantile (0 < q ≤ 1) of the lags counted per bucket, in seconds: the geometric
 * middle of the bucket that holds it. Undefined when nothing was counted.
 */
export function quantileSeconds(counts: ReadonlyMap<number, number>, q: number): number | undefined {
  const total = [...counts.values()].reduce((sum, count) => sum + count, 0);
  if (total === 0) return undefined;
  const rank = Math.ceil(q * total);
  let seen = 0;
  for (const bucket of [...counts.keys()].sort((a, b) => a - b)) {
    seen += counts.get(bucket)!;
    if (seen >= rank) return bucket === 0 ? 0.001 : bucketUpperMs(bucket - 0.5) / 1000;
  }
  return undefined;
}
