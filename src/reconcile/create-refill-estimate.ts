import type { RateLimitState } from "../tenant/rate-limit-state.js";

export interface RefillEstimate {
  /**
   * Reads one answer's `X-RateLimit-*` headers, of a request sent at `sentAt` and answered at
   * `now` (ms; the tenant read its bucket in between), and returns the tenant's refill rate
   * (tokens per second) to pace by from now on, or undefined when the headers name no bucket.
   */
  note(state: RateLimitState | undefined, now: number, sentAt?: number): number | undefined;
  /** The refill rate last returned (the start guess before any answer). */
  perSecond(): number;
}

export interface RefillEstimateOptions {
  /** The guess before any answer, where the ramp starts. @defaultValue 5 */
  startPerSecond?: number;
  /**
   * How fast the guess grows until the headers show the rate: it doubles every this many ms.
   * Quick, because calls already waiting keep the slots they reserved at the slower pace.
   * @defaultValue 250
   */
  doublingMs?: number;
  /** How long bounds are kept before they are measured afresh (the tenant's plan may change). @defaultValue 600000 */
  trustMs?: number;
}

/** Bounds this close together are a measurement: the ramp stops there. */
const tightRatio = 1.5;

/**
 * The tenant's refill rate, from what its headers show. real-world.md: `X-RateLimit-Limit` is
 * the bucket size and `X-RateLimit-Reset` the UNIX second at which it is full again; the rate
 * itself is not shown (tenant-api.md). A bucket missing `Limit - Remaining` tokens that is full
 * at `Reset` refills at missing / (Reset - now), whoever emptied it. `Reset` is rounded to a
 * whole second and `Remaining` to a whole token, and the tenant read its bucket somewhere between
 * our request and its answer, so each answer bounds the rate from both sides: at least
 * (missing - 1) / (Reset - sent), at most (missing + 1) / (Reset - answered - 1 s). The
 * answers narrow the bounds together; once they are within 1.5x of each other their middle
 * is the rate. Until then the guess starts low and doubles every 250 ms, never below the lower bound
 * and never above `Limit` per second (the fastest refill a bucket that refills within a
 * second ever shows): a bucket that is full again within a second shows only that it keeps
 * up. Once the guess outruns the refill, the bucket drains and the next answers measure it.
 */
export function createRefillEstimate(options: RefillEstimateOptions = {}): RefillEstimate {
  const trustMs = options.trustMs ?? 600_000;
  const doublingMs = options.doublingMs ?? 250;
  let guess = options.startPerSecond ?? 5;
  let bounds = { low: 0, high: Infinity, since: -Infinity };
  let ramp: { from: number; at: number } | undefined;
  return {
    note(state, now, sentAt = now) {
      const { limit, remaining, reset } = state ?? {};
      if (limit === undefined || !(limit > 0)) return undefined;
      if (remaining !== undefined && reset !== undefined) {
        const missing = limit - remaining;
        // Seconds from the tenant's reading of its bucket until it is full: at most these, at least those less a second.
        const longest = (reset * 1000 - sentAt) / 1000;
        const shortest = (reset * 1000 - now) / 1000 - 1;
        const low = longest > 0 ? Math.max(0, missing - 1) / longest : 0;
        const high = shortest > 0 ? (missing + 1) / shortest : Infinity;
        // Stale bounds, or a reading they cannot explain (the tenant changed its rate): start over.
        if (now - bounds.since > trustMs || low > bounds.high || high < bounds.low) {
          bounds = { low, high, since: now };
          ramp = undefined;
        } else bounds = { low: Math.max(bounds.low, low), high: Math.min(bounds.high, high), since: bounds.since };
      }
      if (bounds.high <= bounds.low * tightRatio) {
        guess = Math.min(limit, (bounds.low + bounds.high) / 2);
        ramp = undefined;
      } else {
        ramp ??= { from: guess, at: now };
        const ramped = ramp.from * 2 ** ((now - ramp.at) / doublingMs);
        guess = Math.min(limit, Math.max(bounds.low, ramped));
      }
      return guess;
    },
    perSecond: () => guess,
  };
}
