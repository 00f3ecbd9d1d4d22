import { parseRetryAfter } from "../time/retry-after.js";

/**
 * The last `X-RateLimit-*` headers the tenant sent (docs/tenant.md#rate-limits: `Limit` is the bucket
 * size, `Remaining` what is left, `Reset` the UNIX time in seconds when it refills).
 * The reconciler reads it to pace itself before it ever sees a 429.
 */
export interface RateLimitState {
  limit?: number;
  remaining?: number;
  /** UNIX seconds. */
  reset?: number;
}

export function readRateLimit(headers: Headers): RateLimitState | undefined {
  const state: RateLimitState = {
    limit: numberHeader(headers, "x-ratelimit-limit"),
    remaining: numberHeader(headers, "x-ratelimit-remaining"),
    reset: numberHeader(headers, "x-ratelimit-reset"),
  };
  return Object.values(state).some((value) => value !== undefined) ? state : undefined;
}

/**
 * How long the server asked us to wait, or undefined: `Retry-After` (seconds or an HTTP
 * date) first, else `X-RateLimit-Reset`. A reset already past by our clock (clocks differ,
 * or it is this very second) still asks for a wait: a second, the header's own grain, not
 * an immediate retry into the same refusal.
 */
export function serverWaitMs(headers: Headers, now: number, useReset: boolean): number | undefined {
  const retryAfter = parseRetryAfter(headers.get("retry-after"), now);
  if (retryAfter !== undefined) return retryAfter;
  const reset = useReset ? numberHeader(headers, "x-ratelimit-reset") : undefined;
  if (reset === undefined) return undefined;
  const untilReset = reset * 1000 - now;
  return untilReset > 0 ? untilReset : 1000;
}

function numberHeader(headers: Headers, name: string): number | undefined {
  const value = headers.get(name);
  if (value === null || value.trim() === "") return undefined;
  const number = Number(value);
  return Number.isFinite(number) ? number : undefined;
}
