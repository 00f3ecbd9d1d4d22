export interface RateDecision {
  allowed: boolean;
  /** The `X-RateLimit-*` headers, plus `Retry-After` when refused (real-world.md, "Errors and rate limits"). */
  headers: Record<string, string>;
}

export interface RateLimiter {
  take(bucket: string, now?: number): RateDecision;
}

/** What the headers say when no limit is set: the headers are always sent (CONTRACT.md). */
const unlimitedSize = 1000;

/**
 * A token bucket per bucket name (one per client): `perSecond` requests refill each
 * second, up to `perSecond` held. `X-RateLimit-Reset` is the UNIX time in seconds
 * when the bucket is full again.
 */
export function createRateLimiter(perSecond: number | undefined): RateLimiter {
  const buckets = new Map<string, { tokens: number; at: number }>();
  return {
    take(bucket, now = Date.now()) {
      if (perSecond === undefined) return { allowed: true, headers: headers(unlimitedSize, unlimitedSize, Math.ceil(now / 1000)) };
      const state = buckets.get(bucket) ?? { tokens: perSecond, at: now };
      state.tokens = Math.min(perSecond, state.tokens + ((now - state.at) / 1000) * perSecond);
      state.at = now;
      buckets.set(bucket, state);
      const allowed = state.tokens >= 1;
      if (allowed) state.tokens -= 1;
      const fullAt = Math.ceil((now + ((perSecond - state.tokens) / perSecond) * 1000) / 1000);
      const result = headers(Math.max(1, Math.floor(perSecond)), Math.floor(state.tokens), fullAt);
      if (!allowed) result["Retry-After"] = String(Math.max(1, Math.ceil((1 - state.tokens) / perSecond)));
      return { allowed, headers: result };
    },
  };
}

function headers(limit: number, remaining: number, reset: number): Record<string, string> {
  return { "X-RateLimit-Limit": String(limit), "X-RateLimit-Remaining": String(remaining), "X-RateLimit-Reset": String(reset) };
}
