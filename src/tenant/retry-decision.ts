import { jitteredBackoff } from "../time/retry-after.js";
import { serverWaitMs } from "./rate-limit-state.js";

export interface RetryPolicy {
  /** Retries after the first attempt. @defaultValue 3 */
  maxRetries: number;
  /** First backoff delay; doubles each retry. @defaultValue 500 */
  baseDelayMs: number;
  /** Longest backoff delay. @defaultValue 8000 */
  maxDelayMs: number;
  /** Longest wait we accept from `Retry-After` / `X-RateLimit-Reset`. @defaultValue 60000 */
  maxServerWaitMs: number;
}

export const defaultRetryPolicy: RetryPolicy = { maxRetries: 3, baseDelayMs: 500, maxDelayMs: 8000, maxServerWaitMs: 60_000 };

export interface RetryInput {
  /** Retries already made for this request (0 after the first attempt). */
  retries: number;
  /** HTTP status of the answer; undefined when none came (network error, timeout). */
  status?: number;
  headers?: Headers;
  now: number;
  /** A number in [0, 1), for jitter. */
  random: number;
}

export type RetryDecision = { retry: false } | { retry: true; delayMs: number };

/**
 * Whether and when to send a failed request again, in the order stripe-node decides it.
 * Every operation of ours is idempotent (GET, a PATCH that sets values, a DELETE that
 * answers 204 when already gone: docs/tenant.md#token-exchange-profiles), so a retry never does harm twice.
 */
export function retryDecision(input: RetryInput, policy: RetryPolicy = defaultRetryPolicy): RetryDecision {
  const { retries, status, headers, now } = input;
  // 1. Bounded: never more than maxRetries retries.
  if (retries >= policy.maxRetries) return { retry: false };
  const backoff = () => backoffMs(retries, input.random, policy);
  // 2. No answer (connection refused or reset, timeout): the request may not have
  //    arrived; retry with backoff.
  if (status === undefined) return { retry: true, delayMs: backoff() };
  // 3. 429: honour the tenant's hint, Retry-After (seconds) else X-RateLimit-Reset
  //    (UNIX seconds, docs/tenant.md#rate-limits), clamped so a bad clock cannot stall us for hours.
  //    Without a hint, back off.
  if (status === 429) return { retry: true, delayMs: clampedWait(headers, now, true, policy) ?? backoff() };
  // 4. 5xx: a transient fault on the tenant's side; honour Retry-After if sent.
  if (status >= 500) return { retry: true, delayMs: clampedWait(headers, now, false, policy) ?? backoff() };
  // 5. Any other status (400, 401, 403, 404, 409, ...) will not change by asking again.
  //    (A 401 is handled before this: one token refresh, see create-tenant-client.ts.)
  return { retry: false };
}

/** Exponential backoff with jitter: between half and all of base * 2^retries, capped. */
export function backoffMs(retries: number, random: number, policy: RetryPolicy = defaultRetryPolicy): number {
  return jitteredBackoff(policy.baseDelayMs, retries, policy.maxDelayMs, random);
}

function clampedWait(headers: Headers | undefined, now: number, useReset: boolean, policy: RetryPolicy): number | undefined {
  const wait = headers && serverWaitMs(headers, now, useReset);
  return wait === undefined ? undefined : Math.min(wait, policy.maxServerWaitMs);
}
