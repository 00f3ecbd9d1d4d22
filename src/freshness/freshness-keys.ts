/**
 * The freshness sketch's keys (docs/operating.md, "Freshness"): one hash per minute and
 * one per hour, all under one hash tag so one pipeline reads them on a Redis Cluster too.
 * Fields: `<route>|b<bucket>` live deliveries per lag bucket (lag-buckets.ts), `<route>|m`
 * live deliveries later than the route's freshnessSeconds, `<route>|d` deliveries of any
 * origin, `<route>|s` events a dropStale route skipped; in minute hashes, `<route>|w` the
 * events waiting for the route when last sampled in that minute (create-waiting-sampler.ts).
 */
export function freshnessMinuteKey(queuePrefix: string, minute: number): string {
  return `{${queuePrefix}:freshness}:m:${minute}`;
}

export function freshnessHourKey(queuePrefix: string, hour: number): string {
  return `{${queuePrefix}:freshness}:h:${hour}`;
}

/** How long each kind of key is kept: past the hour of charts and the day the operator view reads. */
export const minuteKeyTtlMs = 65 * 60_000;
export const hourKeyTtlMs = 26 * 3_600_000;
