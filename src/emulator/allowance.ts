/** How an allowance refills: `bucket` continuously, `window` all at once at the end of each window. */
export type RefillMode = "bucket" | "window";

export interface AllowanceTake {
  allowed: boolean;
  /** Whole requests left after this one. */
  remaining: number;
  /** When the allowance is whole again (ms since epoch). */
  fullAt: number;
  /** When refused: how long until one request is allowed again (ms). */
  retryAfterMs: number;
}

export interface Allowance {
  take(now: number): AllowanceTake;
  /** What `take` would answer about the allowance, spending nothing. */
  peek(now: number): AllowanceTake;
}

/**
 * `size` requests per `seconds`: as a token bucket that refills `size / seconds` a second
 * up to `size` held (`bucket`), or as windows aligned to the epoch that start whole again
 * (`window`), the two shapes a tenant may limit with (docs/tenant.md#rate-limits).
 */
export function createAllowance(size: number, seconds: number, mode: RefillMode): Allowance {
  const windowMs = seconds * 1000;
  const perMs = size / windowMs;
  let tokens = size;
  let at: number | undefined;
  const refill = (now: number) => {
    if (mode === "window") {
      const start = Math.floor(now / windowMs) * windowMs;
      if (at !== start) tokens = size;
      at = start;
    } else {
      tokens = Math.min(size, tokens + (now - (at ?? now)) * perMs);
      at = now;
    }
  };
  const answer = (now: number, allowed: boolean): AllowanceTake => {
    const windowEnd = Math.floor(now / windowMs) * windowMs + windowMs;
    const full = mode === "window" ? (tokens < size ? windowEnd : now) : now + (size - tokens) / perMs;
    const retry = mode === "window" ? windowEnd - now : (1 - tokens) / perMs;
    return { allowed, remaining: Math.max(0, Math.floor(tokens)), fullAt: full, retryAfterMs: allowed ? 0 : Math.max(0, retry) };
  };
  return {
    take(now) {
      refill(now);
      const allowed = tokens >= 1;
      if (allowed) tokens -= 1;
      return answer(now, allowed);
    },
    peek(now) {
      refill(now);
      return answer(now, tokens >= 1);
    },
  };
}
