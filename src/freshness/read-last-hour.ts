import type { Cluster, Redis } from "ioredis";
import { readTallies, settleMs, windowOf, type Tally } from "./create-freshness-reader.js";
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

export type LastHourReader = (routes: string[], now: number) => Promise<Map<string, LastHour>>;

/**
 * Reads each route's last 60 minutes (the current one included) from the freshness sketch's
 * minute hashes. A minute that ended (and whose last flushes landed) never changes, so each
 * is read once and kept: a read fetches the current minute and any not yet settled, one
 * pipelined round trip whatever the number of routes.
 */
export function createLastHourReader(redis: Redis | Cluster, queuePrefix: string): LastHourReader {
  const settled = new Map<number, Map<string, MinuteFigures>>();
  return async (routes, now) => {
    const current = Math.floor(now / 60_000);
    const minutes = Array.from({ length: minutesShown }, (_, index) => current - minutesShown + 1 + index);
    const missing = minutes.filter((minute) => !settled.has(minute));
    const read = await readTallies(redis, missing.map((minute) => freshnessMinuteKey(queuePrefix, minute)));
    const fresh = new Map(missing.map((minute, index) => [minute, figuresOf(read[index]!)]));
    for (const [minute, figures] of fresh) if (now >= (minute + 1) * 60_000 + settleMs) settled.set(minute, figures);
    for (const minute of settled.keys()) if (minute < minutes[0]!) settled.delete(minute);
    const perMinute = minutes.map((minute) => settled.get(minute) ?? fresh.get(minute)!);
    const starts = minutes.map((minute) => new Date(minute * 60_000).toISOString());
    return new Map(
      routes.map((route) => {
        const figures = perMinute.map((minute) => minute.get(route));
        return [
          route,
          {
            minutes: starts,
            delivered: figures.map((entry) => entry?.delivered ?? 0),
            p99: figures.map((entry) => entry?.p99 ?? null),
            waiting: { all: figures.map((entry) => entry?.waiting ?? null) },
          },
        ];
      }),
    );
  };
}

interface MinuteFigures {
  delivered: number;
  p99: number | null;
  waiting: number | null;
}

/** A minute's figures per route, computed once (a settled minute's are kept). */
function figuresOf(tally: Tally): Map<string, MinuteFigures> {
  return new Map([...tally].map(([route, entry]) => [route, { delivered: entry.delivered, p99: windowOf(entry).p99, waiting: entry.waiting ?? null }]));
}
