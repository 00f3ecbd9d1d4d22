import type { Cluster, Redis } from "ioredis";
import { readTallies, windowOf } from "./create-freshness-reader.js";
import { freshnessMinuteKey } from "./freshness-keys.js";

/**
 * One route's last hour, minute by minute, oldest first (the operator view's charts): the
 * same index in every series is the same minute. `waiting` is by lane (`all` for now), so
 * each lane is one more line of the chart.
 */
export interface LastHour {
  /** each minute's start, ISO 8601 */
  minutes: string[];
  /** deliveries of any origin */
  delivered: number[];
  /** freshness p99 of live events, seconds; null in a minute with none */
  p99: Array<number | null>;
  /** events waiting when sampled; null in a minute with no sample */
  waiting: Record<"all", Array<number | null>>;
}

const minutesShown = 60;

/**
 * Each route's last 60 minutes (the current one included) from the freshness sketch's
 * minute hashes, in one pipelined round trip of 60 HGETALLs whatever the number of routes.
 */
export async function readLastHour(redis: Redis | Cluster, queuePrefix: string, routes: string[], now: number): Promise<Map<string, LastHour>> {
  const current = Math.floor(now / 60_000);
  const minutes = Array.from({ length: minutesShown }, (_, index) => current - minutesShown + 1 + index);
  const tallies = await readTallies(redis, minutes.map((minute) => freshnessMinuteKey(queuePrefix, minute)));
  const starts = minutes.map((minute) => new Date(minute * 60_000).toISOString());
  return new Map(
    routes.map((route) => {
      const entries = tallies.map((tally) => tally.get(route));
      return [
        route,
        {
          minutes: starts,
          delivered: entries.map((entry) => entry?.delivered ?? 0),
          p99: entries.map((entry) => windowOf(entry).p99),
          waiting: { all: entries.map((entry) => entry?.waiting ?? null) },
        },
      ];
    }),
  );
}
