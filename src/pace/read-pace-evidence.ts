import { readClientQuota } from "../tenant/read-client-quota.js";
import { readRateLimit, serverWaitMs } from "../tenant/rate-limit-state.js";

/** The limit a pace is held to: the tenant's bucket (our share of it), our client's quota, or RECONCILE_RATE_PER_SECOND. */
export type PaceLimit = "bucket" | "quota" | "cap";

/**
 * What one answer of the tenant shows about the room left: `room` (grow), `short` (the
 * room shrinks: back off), `refused` (a 429: back off harder) or `none` (no headers).
 */
export type PaceVerdict = "room" | "short" | "refused" | "none";

export interface PaceEvidence {
  /** The tightest limit shown, as calls per second, and which one it is; undefined when nothing is shown. */
  ceiling?: { perSecond: number; limit: PaceLimit };
  verdict: PaceVerdict;
  /** Why, in words for the log (when the verdict changes the pace). */
  reason: string;
  /** Hold every call this long (ms): a 429's `Retry-After`, or an empty bucket or quota until it refills. */
  holdMs: number;
}

export interface PaceEvidenceOptions {
  /** RECONCILE_RATE_SHARE: the part of the tenant's bucket we may spend; others keep the rest. */
  share: number;
  /** RECONCILE_RATE_PER_SECOND, when set. */
  capPerSecond?: number;
  /** The pace now (calls per second), to tell whether the bucket lasts until it refills. */
  pacePerSecond: number;
  now: number;
}

/**
 * A quota is ours alone, but whether it refills continuously or at the end of its window is
 * not documented (docs/tenant.md#rate-limits): pacing a little under it keeps calls that bunch up at a
 * window's edge from being refused.
 */
export const quotaHeadroom = 0.95;

/**
 * Reads one answer's rate-limit headers as evidence for the pace (docs/operating.md, "How
 * the recovery pace works"). The ceiling is the tightest limit shown: RECONCILE_RATE_SHARE of
 * `X-RateLimit-Limit` a second (the bucket's size) and of what a bucket full again only
 * seconds from now allows a second until then (slowBucket), the quota of `Auth0-RateLimit`
 * (q per t seconds), RECONCILE_RATE_PER_SECOND.
 * Room shrinks when the bucket holds less than the others' part of it (`1 - share`) and less
 * than our pace spends until its `X-RateLimit-Reset`: it is then draining faster than it
 * refills. A bucket that refills all at once at the end of a window runs low just before
 * the window ends, but has enough for the little time left, so it shows no shortage.
 */
export function readPaceEvidence(response: { status: number; headers: Headers }, options: PaceEvidenceOptions): PaceEvidence {
  const { headers } = response;
  const { now } = options;
  const bucket = readRateLimit(headers);
  const quota = readClientQuota(headers);
  const limits: Array<{ perSecond: number; limit: PaceLimit }> = [];
  if (options.capPerSecond !== undefined) limits.push({ perSecond: options.capPerSecond, limit: "cap" });
  if (quota) limits.push({ perSecond: (quota.requests / quota.seconds) * quotaHeadroom, limit: "quota" });
  if (bucket?.limit !== undefined && bucket.limit > 0) limits.push({ perSecond: bucket.limit * options.share, limit: "bucket" });
  const slow = slowBucket(bucket, headers);
  if (slow !== undefined) limits.push({ perSecond: slow * options.share, limit: "bucket" });
  const ceiling = limits.reduce<PaceEvidence["ceiling"]>((tightest, limit) => (tightest === undefined || limit.perSecond < tightest.perSecond ? limit : tightest), undefined);

  if (response.status === 429) {
    const byQuota = quota?.remaining === 0;
    return {
      ceiling,
      verdict: "refused",
      reason: byQuota ? "the tenant answered 429: our client's quota is spent" : "the tenant answered 429",
      holdMs: serverWaitMs(headers, now, true) ?? 1000,
    };
  }
  if (bucket?.remaining === 0 && bucket.reset !== undefined) {
    return { ceiling, verdict: "short", reason: "the tenant's bucket is empty", holdMs: Math.max(0, bucket.reset * 1000 - now) };
  }
  if (quota?.remaining === 0) {
    // No reset is shown for a quota: wait the time one request of it takes.
    return { ceiling, verdict: "short", reason: "our client's quota is spent", holdMs: Math.ceil((quota.seconds / quota.requests) * 1000) };
  }
  if (bucket?.limit !== undefined && bucket.remaining !== undefined && bucket.reset !== undefined) {
    const othersPart = (1 - options.share) * bucket.limit;
    const untilReset = Math.max(0, bucket.reset * 1000 - now) / 1000;
    const spentUntilReset = options.pacePerSecond * untilReset + 1;
    if (bucket.remaining < othersPart && bucket.remaining < spentUntilReset) {
      return { ceiling, verdict: "short", reason: `the tenant's bucket is draining: ${bucket.remaining} of ${bucket.limit} left`, holdMs: 0 };
    }
  }
  // No limit shown and no cap set: no evidence either way; the pace stays where it is.
  if (ceiling === undefined) return { ceiling, verdict: "none", reason: "the tenant shows no rate limit", holdMs: 0 };
  return { ceiling, verdict: "room", reason: "the tenant shows room", holdMs: 0 };
}

/**
 * What a bucket that is full again 3 s or more from now allows a second until then, by the
 * tenant's own clock (its `Date` header: ours may differ by seconds): what it lacks over that
 * time (the least a bucket that refills continuously refills a second), or what it holds over
 * that time (what a window that refills at its end has left until then), whichever is more.
 * A bucket that holds more than it refills a second (60 held, 10 a second) shows it so; at the
 * share of its size it would be drained, the other clients' part taken. Both headers are in
 * whole seconds (the reset rounded up, the date down), so a time read as 3 s is more than 1 s:
 * a bucket full within a second (one that refills its size each second, a window of a second)
 * shows nothing here, where it would read its rate several times too low.
 */
function slowBucket(bucket: ReturnType<typeof readRateLimit>, headers: Headers): number | undefined {
  const tenantNow = Date.parse(headers.get("date") ?? "");
  if (bucket?.limit === undefined || bucket.remaining === undefined || bucket.reset === undefined || Number.isNaN(tenantNow)) return undefined;
  const untilFullSeconds = (bucket.reset * 1000 - tenantNow) / 1000;
  if (untilFullSeconds < 3) return undefined;
  return Math.max(bucket.limit - bucket.remaining, bucket.remaining) / untilFullSeconds;
}
