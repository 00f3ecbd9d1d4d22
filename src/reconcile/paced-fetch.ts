import { readRateLimit, serverWaitMs } from "../tenant/rate-limit-state.js";
import type { CallPacer } from "./create-call-pacer.js";
import { createRefillEstimate } from "./create-refill-estimate.js";

export interface PacedFetchOptions {
  pacer: CallPacer;
  /** Answers from under this root carry the API's rate-limit headers (the token endpoint has its own). */
  apiBaseUrl: string;
  /** Longest hold we take from the tenant's headers, so a bad clock cannot stall us. @defaultValue 60000 */
  maxHoldMs?: number;
  /** RECONCILE_RATE_SHARE: the part of the tenant's bucket we may empty. @defaultValue 1 */
  share?: number;
  /** Told of every hold, e.g. to pause the BullMQ queue. */
  onHold?(ms: number): void;
  /** @defaultValue the global fetch */
  fetch?: typeof fetch;
}

/**
 * A `fetch` for the tenant client (its `fetch` option) that takes a pacer slot before
 * every request, retries included, and reads every API answer: the `X-RateLimit-*` headers
 * give the tenant's refill rate (create-refill-estimate.ts; `Limit` is the bucket size, not a
 * rate) and the pacer spends its share of it; on a 429 or an empty bucket (`X-RateLimit-Remaining: 0`)
 * every process holds its calls until the tenant's `Retry-After` / `X-RateLimit-Reset`
 * (real-world.md, "Errors and rate limits"); and when others drain the bucket below their
 * part, we wait for it to refill rather than take what is theirs.
 */
export function pacedFetch(options: PacedFetchOptions): typeof fetch {
  const fetchImpl = options.fetch ?? globalThis.fetch;
  const maxHoldMs = options.maxHoldMs ?? 60_000;
  const refill = createRefillEstimate();
  return async (input, init) => {
    await options.pacer.take();
    const sentAt = Date.now();
    const response = await fetchImpl(input, init);
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    if (url.startsWith(options.apiBaseUrl)) {
      const now = Date.now();
      const perSecond = refill.note(readRateLimit(response.headers), now, sentAt);
      if (perSecond !== undefined) await options.pacer.noteAllowance(perSecond);
      const holdMs = holdAfter(response, now, options.share, refill.perSecond());
      if (holdMs > 0) {
        const ms = Math.min(holdMs, maxHoldMs);
        await options.pacer.holdFor(ms);
        options.onHold?.(ms);
      }
    }
    return response;
  };
}

/**
 * How long to hold calls after this answer: 0 while the bucket has room. Below the others'
 * part of the bucket (`1 - share` of it), the time it takes to refill to that part at
 * `refillPerSecond` (the estimated refill rate; `Limit` per second when not given): others
 * are busy, and they keep their part.
 */
export function holdAfter(response: { status: number; headers: Headers }, now: number, share = 1, refillPerSecond?: number): number {
  if (response.status === 429) return serverWaitMs(response.headers, now, true) ?? 1000;
  const state = readRateLimit(response.headers);
  if (state?.remaining === 0 && state.reset !== undefined) return Math.max(0, state.reset * 1000 - now);
  const { limit, remaining } = state ?? {};
  if (limit === undefined || remaining === undefined || limit <= 0) return 0;
  const othersPart = (1 - share) * limit;
  const refill = refillPerSecond !== undefined && refillPerSecond > 0 ? refillPerSecond : limit;
  return remaining < othersPart ? Math.ceil(((othersPart - remaining) / refill) * 1000) : 0;
}
