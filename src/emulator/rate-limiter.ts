import { createAllowance, type Allowance, type RefillMode } from "./allowance.js";

export interface RateDecision {
  allowed: boolean;
  /** The `X-RateLimit-*` headers, plus `Retry-After` when refused (docs/tenant.md#rate-limits). */
  headers: Record<string, string>;
}

export interface RateLimiter {
  take(bucket: string, now?: number): RateDecision;
  /** The headers of `bucket` as they stand, spending nothing (an answer refused by a quota first). */
  peek(bucket: string, now?: number): RateDecision;
}

/** What the headers say when no limit is set: the headers are always sent (docs/tenant.md#rate-limits). */
const unlimitedSize = 1000;

/**
 * An allowance per bucket name (one for the tenant, shared by its clients; one per address for 401s): `perSecond` requests a second, refilled
 * continuously (`bucket`, up to `size` held) or all at once at the end of each `size / perSecond`
 * seconds (`window`, EMULATOR_RATE_LIMIT_MODE). `X-RateLimit-Limit` is the size (a bucket may
 * refill more slowly than it holds), `X-RateLimit-Reset` the UNIX time in seconds when it is full again.
 */
export function createRateLimiter(perSecond: number | undefined, mode: RefillMode = "bucket", size?: number): RateLimiter {
  const buckets = new Map<string, Allowance>();
  const decide = (bucket: string, now: number, spend: boolean): RateDecision => {
    if (perSecond === undefined) return { allowed: true, headers: headers(unlimitedSize, unlimitedSize, Math.ceil(now / 1000)) };
    let allowance = buckets.get(bucket);
    const held = size ?? perSecond;
    if (!allowance) buckets.set(bucket, (allowance = createAllowance(mode === "window" ? Math.max(1, Math.floor(held)) : held, held / perSecond, mode)));
    const taken = spend ? allowance.take(now) : allowance.peek(now);
    const result = headers(Math.max(1, Math.floor(held)), taken.remaining, Math.ceil(taken.fullAt / 1000));
    if (!taken.allowed) result["Retry-After"] = String(Math.max(1, Math.ceil(taken.retryAfterMs / 1000)));
    return { allowed: taken.allowed, headers: result };
  };
  return {
    take: (bucket, now = Date.now()) => decide(bucket, now, true),
    peek: (bucket, now = Date.now()) => decide(bucket, now, false),
  };
}

function headers(limit: number, remaining: number, reset: number): Record<string, string> {
  return { "X-RateLimit-Limit": String(limit), "X-RateLimit-Remaining": String(remaining), "X-RateLimit-Reset": String(reset) };
}
