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
/** Past hours no longer change once their last flushes landed (a second, with margin): read once. */
const settleMs = 10_000;

type Tally = Map<string, { buckets: Map<number, number>; missed: number; delivered: number; stale: number }>;

/**
 * Reads the freshness sketch (create-freshness-recorder.ts) in one round trip of 7 HGETALLs
 * whatever the number of routes or events: the last 6 minutes and the current hour; the
 * 24 hours before it are read once per hour and kept. Windows are whole minutes and hours, so "5 minutes" is 5 to 6 and "a day" 24
 * to 25 hours (docs/operating.md, "Freshness").
 */
export function createFreshnessReader(redis: Redis | Cluster, queuePrefix: string): FreshnessReader {
  let pastHours: { hour: number; tally: Tally } | undefined;

  const readKeys = async (keys: string[]): Promise<Tally> => {
    const pipeline = redis.pipeline();
    for (const key of keys) pipeline.hgetall(key);
    const replies = (await pipeline.exec()) ?? [];
    const tally: Tally = new Map();
    for (const [error, reply] of replies) {
      if (error) throw error;
      for (const [field, value] of Object.entries(reply as Record<string, string>)) add(tally, field, Number(value));
    }
    return tally;
  };

  return {
    async read(routes, now) {
      const minute = Math.floor(now / 60_000);
      const hour = Math.floor(minute / 60);
      const settled = pastHours?.hour === hour && now - hour * 3_600_000 >= settleMs;
      const [recent, currentHour, past] = await Promise.all([
        readKeys(Array.from({ length: minutesRead }, (_, back) => freshnessMinuteKey(queuePrefix, minute - back))),
        readKeys([freshnessHourKey(queuePrefix, hour)]),
        settled ? pastHours!.tally : readKeys(Array.from({ length: hoursRead - 1 }, (_, back) => freshnessHourKey(queuePrefix, hour - 1 - back))),
      ]);
      if (!settled) pastHours = { hour, tally: past };
      const dayTally = merge(past, currentHour);
      // The current minute counts for the part of it that has passed.
      const minutesCovered = minutesRead - 1 + (now % 60_000) / 60_000;
      return new Map(
        routes.map((route) => {
          const last5m = recent.get(route);
          const lastDay = dayTally.get(route);
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
  else if (kind.startsWith("b")) {
    const bucket = Number(kind.slice(1));
    entry.buckets.set(bucket, (entry.buckets.get(bucket) ?? 0) + value);
  }
}

function windowOf(entry: { buckets: Map<number, number>; missed: number } | undefined): FreshnessWindow {
  if (!entry) return { count: 0, p50: null, p99: null, missed: 0 };
  const count = [...entry.buckets.values()].reduce((sum, n) => sum + n, 0);
  return { count, p50: round(quantileSeconds(entry.buckets, 0.5)), p99: round(quantileSeconds(entry.buckets, 0.99)), missed: entry.missed };
}

function round(seconds: number | undefined): number | null {
  if (seconds === undefined) return null;
  return seconds >= 10 ? Math.round(seconds) : Math.round(seconds * 1000) / 1000;
}
