/** A BullMQ worker `limiter`: at most `max` jobs started per `duration` ms. */
export interface RateLimiter {
  max: number;
  duration: number;
}

/** Far above any delivery rate: the limiter of a route without `ratePerSecond`. */
const noLimit = 1_000_000_000;

/**
 * The worker limiter for a route's `ratePerSecond` (README.md#routes).
 * BullMQ counts a limiter's jobs in one Redis key per queue (INCR in moveToActive), so it
 * holds across every worker process. Its windows are fixed: a one-second window of `rate`
 * jobs lets a burst of `rate` at its end and another at the start of the next. So the
 * second is cut into windows of about 100 ms (at least one job each), and any one-second
 * span sees at most the rate plus one small window's jobs.
 *
 * A route without a rate gets a limiter too: BullMQ honours a hold of the queue (the
 * circuit's `rateLimit`) only where a limiter is set (getRateLimitTTL.lua).
 */
export function rateLimiter(ratePerSecond?: number): RateLimiter {
  if (ratePerSecond === undefined) return { max: noLimit, duration: 1000 };
  const max = Math.max(1, Math.floor(ratePerSecond / 10));
  return { max, duration: Math.ceil((1000 * max) / ratePerSecond) };
}
