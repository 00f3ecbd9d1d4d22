import type { Cluster, Redis } from "ioredis";
import type { Logger } from "../logging/logger.js";
import { deliveryLag, freshnessMissed } from "../metrics/delivery-lag.js";
import { bucketOf } from "./lag-buckets.js";
import { freshnessHourKey, freshnessMinuteKey, hourKeyTtlMs, minuteKeyTtlMs } from "./freshness-keys.js";

/** Origins of live events: the objective (freshnessSeconds) is about them, not about recoveries and replays. */
const liveOrigins: ReadonlySet<string> = new Set(["webhook", "pull"]);

/** The lane the delivered job waited in (queue/lane.ts): the objective reads the live lane only. */
export type DeliveredLane = "live" | "late";

export interface FreshnessRecorder {
  /** A route answered 2xx for the event at `at` (ms); `time` is the event's own, when it has one; `lane` the one its job waited in. */
  delivered(route: { name: string; freshnessSeconds?: number }, origin: string, lane: DeliveredLane, time: string | undefined, at: number): void;
  /** A dropStale route skipped the event as older than what it has. */
  skippedStale(route: string, at: number): void;
  /** Writes what is left and stops the timer. */
  close(): Promise<void>;
}

export interface FreshnessRecorderDeps {
  /** A connection that waits out a slow Redis (the dispatcher's ledger connection). */
  redis: Redis | Cluster;
  queuePrefix: string;
  logger: Logger;
  /** How often the counts go to Redis. @defaultValue 1000 */
  flushEveryMs?: number;
}

/**
 * Observes `streamkeeper_delivery_lag_seconds` at each 2xx, and keeps the operator view's
 * freshness sketch: counts per minute in this process, added to Redis once a second in one
 * pipeline (HINCRBY), so a delivery costs no round trip of its own and every process's
 * counts add up. A crash loses at most the last second's counts of that process.
 */
export function createFreshnessRecorder({ redis, queuePrefix, logger, flushEveryMs = 1000 }: FreshnessRecorderDeps): FreshnessRecorder {
  /** minute (ms since epoch / 60000) → field → count */
  let pending = new Map<number, Map<string, number>>();
  const count = (at: number, field: string) => {
    const minute = Math.floor(at / 60_000);
    let fields = pending.get(minute);
    if (!fields) pending.set(minute, (fields = new Map()));
    fields.set(field, (fields.get(field) ?? 0) + 1);
  };

  let flushing: Promise<void> | undefined;
  const flush = async () => {
    if (pending.size === 0) return;
    const taken = pending;
    pending = new Map();
    const pipeline = redis.pipeline();
    for (const [minute, fields] of taken) {
      const minuteKey = freshnessMinuteKey(queuePrefix, minute);
      const hourKey = freshnessHourKey(queuePrefix, Math.floor(minute / 60));
      for (const [field, n] of fields) pipeline.hincrby(minuteKey, field, n).hincrby(hourKey, field, n);
      pipeline.pexpire(minuteKey, minuteKeyTtlMs).pexpire(hourKey, hourKeyTtlMs);
    }
    try {
      const replies = (await pipeline.exec()) ?? [];
      const failed = replies.find(([error]) => error);
      if (failed) throw failed[0];
    } catch (error) {
      // Kept for the next flush, unless older than the minute keys live: then the view's
      // freshness misses them, which is all they were for (the metric has them).
      const oldest = Math.floor(Date.now() / 60_000) - minuteKeyTtlMs / 60_000;
      for (const [minute, fields] of taken) {
        if (minute < oldest) continue;
        const now = pending.get(minute) ?? new Map<string, number>();
        for (const [field, n] of fields) now.set(field, (now.get(field) ?? 0) + n);
        pending.set(minute, now);
      }
      logger.debug({ err: error }, "freshness counts not written to Redis; retried in a second");
    }
  };
  const timer = setInterval(() => {
    flushing ??= flush().finally(() => (flushing = undefined));
  }, flushEveryMs);
  timer.unref();

  return {
    delivered(route, origin, lane, time, at) {
      count(at, `${route.name}|d`);
      const eventTime = time === undefined ? NaN : Date.parse(time);
      if (Number.isNaN(eventTime)) return;
      const lagMs = at - eventTime;
      deliveryLag.labels(route.name, origin, lane).observe(Math.max(0, lagMs) / 1000);
      // A late event was old when it came: its lag says nothing of how this service keeps up.
      if (!liveOrigins.has(origin) || lane !== "live") return;
      count(at, `${route.name}|b${bucketOf(lagMs)}`);
      if (route.freshnessSeconds !== undefined && lagMs > route.freshnessSeconds * 1000) {
        freshnessMissed.inc({ route: route.name });
        count(at, `${route.name}|m`);
      }
    },
    skippedStale(route, at) {
      count(at, `${route}|s`);
    },
    async close() {
      clearInterval(timer);
      await flushing;
      await flush();
    },
  };
}
