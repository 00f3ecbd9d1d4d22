import { readRateLimit, serverWaitMs } from "../tenant/rate-limit-state.js";
import type { CallPacer } from "./create-call-pacer.js";

export interface PacedFetchOptions {
  pacer: CallPacer;
  /** Answers from under this root carry the API's rate-limit headers (the token endpoint has its own). */
  apiBaseUrl: string;
  /** Longest hold we take from the tenant's headers, so a bad clock cannot stall us. @defaultValue 60000 */
  maxHoldMs?: number;
  /** Told of every hold, e.g. to pause the BullMQ queue. */
  onHold?(ms: number): void;
  /** @defaultValue the global fetch */
  fetch?: typeof fetch;
}

/**
 * A `fetch` for the tenant client (its `fetch` option) that takes a pacer slot before
 * every request, retries included, and reads every API answer: on a 429 or an empty
 * bucket (`X-RateLimit-Remaining: 0`) every process holds its calls until the tenant's
 * `Retry-After` / `X-RateLimit-Reset` (real-world.md, "Errors and rate limits").
 */
export function pacedFetch(options: PacedFetchOptions): typeof fetch {
  const fetchImpl = options.fetch ?? globalThis.fetch;
  const maxHoldMs = options.maxHoldMs ?? 60_000;
  return async (input, init) => {
    await options.pacer.take();
    const response = await fetchImpl(input, init);
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    if (url.startsWith(options.apiBaseUrl)) {
      const holdMs = holdAfter(response, Date.now());
      if (holdMs > 0) {
        const ms = Math.min(holdMs, maxHoldMs);
        await options.pacer.holdFor(ms);
        options.onHold?.(ms);
      }
    }
    return response;
  };
}

/** How long to hold calls after this answer: 0 while the bucket has room. */
export function holdAfter(response: { status: number; headers: Headers }, now: number): number {
  if (response.status === 429) return serverWaitMs(response.headers, now, true) ?? 1000;
  const state = readRateLimit(response.headers);
  if (state?.remaining === 0 && state.reset !== undefined) return Math.max(0, state.reset * 1000 - now);
  return 0;
}
