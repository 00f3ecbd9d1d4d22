import type { Cluster, Redis } from "ioredis";
import { freshnessHourKey, freshnessMinuteKey } from "./freshness-keys.js";
import { quantileSeconds } from "./lag-buckets.js";

/** Freshness of live events delivered to one route within a window. */
export interface FreshnessWindow {
  /** live events delivered (and dated) */
  count: number;
  /** seconds; null when none */
  p50: number | null;
  p99: number | null;
  /** of `count`, delivered later than the route's freshnessSeconds */
  missed: number;
}

export interface RouteActivity {
  /** deliveries of any origin per minute over the last 5 minutes */
  deliveredPerMinute: number;
  /** events a dropStale route skipped in the last day */
  staleLastDay: number;
  last5m: FreshnessWindow;
  lastDay: FreshnessWindow;
}

export interface FreshnessReader {
  /** Each route's activity; routes with none get zeros. */
  read(routes: string[], now: number): Promise<Map<string, RouteActivity>>;
}

/** The last 5 minutes: the current minute and the 5 before it. The last day: the current hour and the 24 before it. */
const minutesRead = 6;
const hoursRead = 25;
/** A period no longer changes once its last flushes landed (a second after it ends, with margin). */
export const settleMs = 10_000;

/** Per route: live deliveries per lag bucket, late ones, deliveries of any origin, stale skips, and the last waiting sample (create-waiting-sampler.ts). */
export type Tally = Map<string, { buckets: Map<number, number>; missed: number; delivered: number; stale: number; waiting?: number }>;

/** Hashes of the sketch (freshness-keys.ts) as their routes' figures, in one pipelined round trip. */
export async function readTallies(redis: Redis | Cluster, keys: string[]): Promise<Tally[]> {
  if (keys.length === 0) return [];
  const pipeline = redis.pipeline();
  for (const key of keys) pipeline.hgetall(key);
  const replies = (await pipeline.exec()) ?? [];
  return replies.map(([error, reply]) => {
    if (error) throw error;
    const tally: Tally = new Map();
    for (const [field, value] of Object.entries(reply as Record<string, string>)) add(tally, field, Number(value));
    return tally;
  });
}

/** The current hour changes the day's figures little: read it again at most this often. */
const currentHourMs = 10_000;

/**
 * Reads the freshness sketch (create-freshness-recorder.ts) whatever the number of routes or
 * events without reading it all each time: a minute or hour that ended (and whose last
 * flushes landed) never changes, so each is read once and the sums of the 5 minutes and the
 * 24 hours before the current ones are kept; a read then fetches the current minute, and the
 * current hour every 10 s. Windows are whole minutes and hours, so "5 minutes" is 5 to 6
 * and "a day" 24 to 25 hours (docs/operating.md, "Freshness").
 */
export function createFreshnessReader(redis: Redis | Cluster, queuePrefix: string): FreshnessReader {
  const minutes = createPeriodSums(60_000, minutesRead - 1, (minute) => freshnessMinuteKey(queuePrefix, minute));
  const hours = createPeriodSums(3_600_000, hoursRead - 1, (hour) => freshnessHourKey(queuePrefix, hour));
  let currentHour: { hour: number; at: number; day: Tally } | undefined;

  const readKeys = (keys: string[]) => readTallies(redis, keys);

  return {
    async read(routes, now) {
      const minute = Math.floor(now / 60_000);
      const hour = Math.floor(minute / 60);
      const hourDue = currentHour?.hour !== hour || now - currentHour.at >= currentHourMs;
      const [[thisMinute], pastMinutes, day] = await Promise.all([
        readKeys([freshnessMinuteKey(queuePrefix, minute)]),
        minutes.before(minute, now, readKeys),
        hourDue
          ? Promise.all([readKeys([freshnessHourKey(queuePrefix, hour)]), hours.before(hour, now, readKeys)]).then(([[tally], past]) => merge(past, tally!))
          : currentHour!.day,
      ]);
      if (hourDue) currentHour = { hour, at: now, day };
      const recent = merge(pastMinutes, thisMinute!);
      // The current minute counts for the part of it that has passed.
      const minutesCovered = minutesRead - 1 + (now % 60_000) / 60_000;
      return new Map(
        routes.map((route) => {
          const last5m = recent.get(route);
          const lastDay = day.get(route);
          return [
            route,
            {
              deliveredPerMinute: Math.round(((last5m?.delivered ?? 0) / minutesCovered) * 10) / 10,
              staleLastDay: lastDay?.stale ?? 0,
              last5m: windowOf(last5m),
              lastDay: windowOf(lastDay),
            },
          ];
        }),
      );
    },
  };
}

/**
 * The sum of the `count` periods (minutes or hours) before the current one: each period is
 * read once it is settled (ended `settleMs` ago) and kept, and their sum is kept while the
 * current period lasts.
 */
function createPeriodSums(periodMs: number, count: number, keyOf: (period: number) => string) {
  const settled = new Map<number, Tally>();
  let sum: { current: number; tally: Tally } | undefined;
  return {
    async before(current: number, now: number, readKeys: (keys: string[]) => Promise<Tally[]>): Promise<Tally> {
      if (sum?.current === current) return sum.tally;
      const periods = Array.from({ length: count }, (_, back) => current - count + back);
      const missing = periods.filter((period) => !settled.has(period));
      const read = await readKeys(missing.map(keyOf));
      const isSettled = (period: number) => now >= (period + 1) * periodMs + settleMs;
      const tallies = new Map(missing.map((period, index) => [period, read[index]!]));
      for (const [period, tally] of tallies) if (isSettled(period)) settled.set(period, tally);
      for (const period of settled.keys()) if (period < current - count) settled.delete(period);
      const total = periods.map((period) => settled.get(period) ?? tallies.get(period)!).reduce(merge, new Map());
      if (periods.every(isSettled)) sum = { current, tally: total };
      return total;
    },
  };
}

function merge(a: Tally, b: Tally): Tally {
  const merged: Tally = new Map();
  for (const tally of [a, b]) {
    for (const [route, entry] of tally) {
      for (const [bucket, n] of entry.buckets) add(merged, `${route}|b${bucket}`, n);
      add(merged, `${route}|m`, entry.missed);
      add(merged, `${route}|d`, entry.delivered);
      add(merged, `${route}|s`, entry.stale);
    }
  }
  return merged;
}

function add(tally: Tally, field: string, value: number) {
  const bar = field.lastIndexOf("|");
  if (bar < 0 || !Number.isFinite(value)) return;
  const route = field.slice(0, bar);
  const kind = field.slice(bar + 1);
  let entry = tally.get(route);
  if (!entry) tally.set(route, (entry = { buckets: new Map(), missed: 0, delivered: 0, stale: 0 }));
  if (kind === "d") entry.delivered += value;
  else if (kind === "s") entry.stale += value;
  else if (kind === "m") entry.missed += value;
  else if (kind === "w") entry.waiting = value;
  else if (kind.startsWith("b")) {
    const bucket = Number(kind.slice(1));
    entry.buckets.set(bucket, (entry.buckets.get(bucket) ?? 0) + value);
  }
}

export function windowOf(entry: { buckets: Map<number, number>; missed: number } | undefined): FreshnessWindow {
  if (!entry) return { count: 0, p50: null, p99: null, missed: 0 };
  const count = [...entry.buckets.values()].reduce((sum, n) => sum + n, 0);
  return { count, p50: round(quantileSeconds(entry.buckets, 0.5)), p99: round(quantileSeconds(entry.buckets, 0.99)), missed: entry.missed };
}

function round(seconds: number | undefined): number | null {
  if (seconds === undefined) return null;
  return seconds >= 10 ? Math.round(seconds * 10) / 10 : Math.round(seconds * 1000) / 1000;
}
