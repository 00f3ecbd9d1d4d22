import { jitteredBackoff, parseRetryAfter } from "../time/retry-after.js";

/**
 * What one delivery attempt came back with: an HTTP answer, or none (network error,
 * timeout; `permanent`: the request could not even be sent as it is, so never will be).
 */
export type AttemptResult =
  | { status: number; retryAfter?: string; detail?: string }
  | { error: string; permanent?: true };

export type Decision =
  | { action: "delivered" }
  | { action: "retry"; reason: string; retryAfterMs?: number }
  | { action: "fail"; reason: string };

/**
 * What to do after one attempt, decided in this order (README.md#routes,
 * in the shape of stripe-node's retry rule):
 */
export function decide(result: AttemptResult, now = Date.now()): Decision {
  // 1. No answer: connection refused or reset, DNS, timeout. The event may not have
  //    arrived; the downstream drops a repeat by its webhook-id, so retry.
  if ("error" in result) return result.permanent ? { action: "fail", reason: result.error } : { action: "retry", reason: result.error };
  const { status, detail } = result;
  const answered = `downstream answered ${status}${detail ? `: ${detail}` : ""}`;
  // 2. Any 2xx is success.
  if (status >= 200 && status < 300) return { action: "delivered" };
  // 3. 408, 429 and 5xx are transient: retry, at the time the downstream asks for if it does.
  if (status === 408 || status === 429 || status >= 500) {
    return { action: "retry", reason: answered, retryAfterMs: parseRetryAfter(result.retryAfter, now) };
  }
  // 4. Any other 4xx will not change by asking again: fail at once (a dead letter to fix
  //    the route or the downstream, then replay).
  if (status >= 400) return { action: "fail", reason: answered };
  // 5. 1xx/3xx: we do not follow redirects (a POST must not silently move).
  return { action: "fail", reason: `${answered}; point the route's url at the final address` };
}

export interface Backoff {
  /** First retry delay; doubles each attempt (DISPATCH_BACKOFF_BASE_MS). */
  baseMs: number;
  /** Longest delay, also the clamp on `Retry-After` (DISPATCH_BACKOFF_MAX_MS). */
  maxMs: number;
}

/**
 * The delay before the next attempt, after `attemptsMade` failed ones (1 after the first).
 * The downstream's `Retry-After` wins, clamped to `maxMs` so a bad hint cannot park an
 * event for days. Otherwise exponential with "equal jitter": between half and all of
 * base * 2^(attempts-1), capped, so retries of a burst spread out instead of landing together.
 */
export function backoffDelay(attemptsMade: number, backoff: Backoff, retryAfterMs?: number, random = Math.random()): number {
  if (retryAfterMs !== undefined) return Math.min(retryAfterMs, backoff.maxMs);
  return jitteredBackoff(backoff.baseMs, attemptsMade - 1, backoff.maxMs, random);
}
