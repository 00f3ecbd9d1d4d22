import type { Cluster, Redis } from "ioredis";
import { streamWatchKey } from "../queue/queue-names.js";
import { createRedisLease } from "../redis/redis-lease.js";
import type { AutoEnableStreak } from "./auto-enable-backoff.js";

/** What the last check found of one swept stream. */
export interface StreamHealth extends AutoEnableStreak {
  status: "enabled" | "disabled";
  /** ms since the epoch */
  checkedAt: number;
}

export interface StreamHealthStore {
  /**
   * Takes this interval's check for the caller across every process: 0 when taken, else
   * the ms (at least 1) until the claim that holds it ends. So N workers make one tenant
   * call per interval, not N.
   */
  claim(): Promise<number>;
  /** The last check's findings, by stream id. */
  read(): Promise<Map<string, StreamHealth>>;
  /** Replaces the findings whole: a stream no longer swept drops out. */
  write(health: Map<string, StreamHealth>): Promise<void>;
}

/**
 * The stream watch's state in Redis, shared by the worker processes: the claim on the
 * current interval and what the last check found (every worker reports it in /metrics).
 * The findings expire after three intervals without a check, so a watch that stopped
 * (no worker left, Redis flushed) shows as absent series, not as a stale "enabled".
 */
export function createStreamHealthStore(redis: Redis | Cluster, queuePrefix: string, intervalMs: number): StreamHealthStore {
  const healthKey = streamWatchKey(queuePrefix, "health");
  // A lease never renewed nor given back: it ends with the interval it claims.
  const claim = createRedisLease(redis, streamWatchKey(queuePrefix, "claim"));
  const owner = String(process.pid);
  return {
    claim: () => claim.acquire(owner, intervalMs),

    async read() {
      const fields = await redis.hgetall(healthKey);
      const health = new Map<string, StreamHealth>();
      for (const [streamId, json] of Object.entries(fields)) {
        try {
          health.set(streamId, JSON.parse(json) as StreamHealth);
        } catch {
          // Written by us only; an unreadable entry is rewritten by the next check.
        }
      }
      return health;
    },

    async write(health) {
      const multi = redis.multi().del(healthKey);
      if (health.size > 0) multi.hset(healthKey, Object.fromEntries([...health].map(([id, found]) => [id, JSON.stringify(found)])));
      const replies = (await multi.pexpire(healthKey, intervalMs * 3).exec()) ?? [];
      for (const [error] of replies) if (error) throw error;
    },
  };
}
