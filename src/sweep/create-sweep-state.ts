import type { Cluster, Redis } from "ioredis";
import { loadLua } from "../redis/load-lua.js";
import { sweepKey } from "../queue/queue-names.js";
import { createRedisLease } from "../redis/redis-lease.js";

/** What `GET /admin/sweep` shows of one stream (README.md#the-sweep-failed-deliveries-found-without-being-told). */
export interface StreamSweepStatus {
  streamId: string;
  /** End of the last window read completely (ISO 8601), null before the first. */
  checkpoint: string | null;
  /** When the last run of this stream ended, ok or not. */
  lastRunAt: string | null;
  /** Why the last run failed; null when it went through. */
  lastError: string | null;
  /** Failed deliveries found that this service did not have, since the state was created. */
  found: number;
  /** Of those, recovered (stored and queued for the routes). */
  recovered: number;
  /** Failed deliveries listed within the lookback that this service still does not have. */
  unrecovered: number;
  /** The latest of those (up to 10), each with why it was not recovered. */
  unrecoveredSample: Array<{ eventId: string; reason: string }>;
  /**
   * Seconds since the start of what is not read yet: the checkpoint, or before the first
   * window is read, the start of the first sweep's lookback (so a stream whose first window
   * never completes still has a lag that grows). Null before any run.
   */
  lagSeconds: number | null;
}

export interface SweepState {
  /** Takes the sweeper lease if nobody holds it and no sweep is due later (`intervalMs` since the last one started). */
  acquire(owner: string, leaseMs: number, intervalMs: number): Promise<boolean>;
  /** Extends the lease; false when it is no longer ours (expired and taken). */
  renew(owner: string, leaseMs: number): Promise<boolean>;
  release(owner: string): Promise<void>;
  /** End of the last window of the stream read completely (ms), undefined before the first. */
  checkpoint(streamId: string): Promise<number | undefined>;
  /** Moves the checkpoint forward, only while `owner` holds the lease (a fence against a sweeper that lost it). */
  advance(owner: string, streamId: string, endMs: number): Promise<boolean>;
  /** When the last deep pass of the stream (or its first sweep) started: every window of the lookback read (ms). */
  deepPassAt(streamId: string): Promise<number | undefined>;
  /** A deep pass of the stream, started at `at`, read every window up to now. */
  noteDeepPass(streamId: string, at: number): Promise<void>;
  /** The end of one run of the stream. */
  noteRun(streamId: string, at: number, error?: string): Promise<void>;
  /** Records outcomes: `recovered` ids leave the unrecovered set, `unrecovered` ones join it; answers how many were new findings. */
  noteOutcomes(streamId: string, outcomes: { recovered: string[]; received: string[]; unrecovered: string[]; reasons?: Record<string, string> }, at: number): Promise<number>;
  /**
   * Drops from the unrecovered set the ids `arrived` says are here now (recovered by id, a
   * redelivery, the pull): the tenant never lists a success again, so nothing else would
   * take them out before the lookback ends. Looks at `limit` ids, oldest first. Answers how many left.
   */
  dropArrived(streamId: string, arrived: (eventId: string) => Promise<boolean>, limit?: number): Promise<number>;
  /** Forgets the streams not in `streamIds` (no longer ours: pointed elsewhere, or unnamed), so their lag stops growing and alerting. */
  retain(streamIds: string[]): Promise<void>;
  /** Every stream swept so far, with its figures; unrecovered counted within the lookback. */
  describe(lookbackMs: number, now: number): Promise<StreamSweepStatus[]>;
}

// The lease and the "not before" key in one step (sweep-acquire.lua), and the checkpoint
// written only by the lease's holder (sweep-advance.lua).
const acquireScript = loadLua(new URL("./sweep-acquire.lua", import.meta.url));
const advanceScript = loadLua(new URL("./sweep-advance.lua", import.meta.url));

type StateCommands = {
  streamkeeperSweepAcquire(lease: string, due: string, owner: string, leaseMs: number, intervalMs: number): Promise<number>;
  streamkeeperSweepAdvance(lease: string, stream: string, streams: string, owner: string, endMs: number, streamId: string): Promise<number>;
};

/**
 * The sweep's state in Redis, under a hash tag of its own (one Cluster slot, queue-names.ts): a
 * lease naming the one sweeper, a "not before" key spacing sweeps by the interval across
 * processes, and per stream a hash (checkpoint, last run, figures) and a sorted set of
 * the failed deliveries we still lack, scored by when first seen.
 */
export function createSweepState(redis: Redis | Cluster, queuePrefix: string, options: { failFast?: Redis | Cluster } = {}): SweepState {
  const leaseKey = sweepKey(queuePrefix, "lease");
  const dueKey = sweepKey(queuePrefix, "due");
  const streamsKey = sweepKey(queuePrefix, "streams");
  const streamKey = (streamId: string) => sweepKey(queuePrefix, `stream:${streamId}`);
  const unrecoveredKey = (streamId: string) => sweepKey(queuePrefix, `unrecovered:${streamId}`);
  const reasonsKey = (streamId: string) => sweepKey(queuePrefix, `unrecovered-reasons:${streamId}`);
  /** Longest reason kept per id: an error message can quote a whole payload. */
  const reasonChars = 500;
  // The lease and `describe` on a connection that fails fast when given one: a sweeper then
  // learns Redis is away at its next tick (and says so) instead of waiting on a queued
  // command, and GET /admin/sweep and a scrape answer while Redis is away.
  const failFastRedis = options.failFast ?? redis;
  failFastRedis.defineCommand("streamkeeperSweepAcquire", { numberOfKeys: 2, lua: acquireScript });
  const lease = createRedisLease(failFastRedis, leaseKey);
  redis.defineCommand("streamkeeperSweepAdvance", { numberOfKeys: 3, lua: advanceScript });
  const commands = redis as unknown as StateCommands;
  const leaseCommands = failFastRedis as unknown as StateCommands;
  const iso = (ms: string | undefined) => (ms ? new Date(Number(ms)).toISOString() : null);

  return {
    acquire: async (owner, leaseMs, intervalMs) => (await leaseCommands.streamkeeperSweepAcquire(leaseKey, dueKey, owner, leaseMs, intervalMs)) === 1,
    renew: (owner, leaseMs) => lease.renew(owner, leaseMs),
    release: async (owner) => void (await lease.release(owner)),
    async checkpoint(streamId) {
      const value = await redis.hget(streamKey(streamId), "checkpoint");
      return value ? Number(value) : undefined;
    },
    async deepPassAt(streamId) {
      const value = await redis.hget(streamKey(streamId), "deepPassAt");
      return value ? Number(value) : undefined;
    },
    noteDeepPass: async (streamId, at) => void (await redis.hset(streamKey(streamId), "deepPassAt", at)),
    advance: async (owner, streamId, endMs) => (await commands.streamkeeperSweepAdvance(leaseKey, streamKey(streamId), streamsKey, owner, endMs, streamId)) === 1,
    async noteRun(streamId, at, error) {
      await redis
        .multi()
        .hset(streamKey(streamId), "lastRunAt", at, "lastError", error ?? "")
        // The lag of a stream with no checkpoint yet counts from its first run (describe).
        .hsetnx(streamKey(streamId), "firstRunAt", at)
        .sadd(streamsKey, streamId)
        .exec();
    },
    async noteOutcomes(streamId, { recovered, received, unrecovered, reasons = {} }, at) {
      const key = unrecoveredKey(streamId);
      const pipeline = redis.pipeline();
      // Each id once: one that failed to recover in an earlier run and recovers now is not found twice.
      for (const id of unrecovered) pipeline.zadd(key, "NX", at, id);
      pipeline.zrem(key, "", ...recovered);
      pipeline.zrem(key, "", ...received);
      const why = Object.entries(reasons).filter(([id]) => unrecovered.includes(id));
      if (why.length > 0) pipeline.hset(reasonsKey(streamId), ...why.flatMap(([id, reason]) => [id, reason.slice(0, reasonChars)]));
      if (recovered.length + received.length > 0) pipeline.hdel(reasonsKey(streamId), ...recovered, ...received);
      const replies = (await pipeline.exec()) ?? [];
      for (const [error] of replies) if (error) throw error;
      const newlyUnrecovered = replies.slice(0, unrecovered.length).filter(([, added]) => added === 1).length;
      const recoveredAfterAll = Number(replies[unrecovered.length]![1]);
      const found = newlyUnrecovered + recovered.length - recoveredAfterAll;
      if (found > 0 || recovered.length > 0) {
        await redis.multi().hincrby(streamKey(streamId), "found", found).hincrby(streamKey(streamId), "recovered", recovered.length).sadd(streamsKey, streamId).exec();
      }
      return found;
    },
    async dropArrived(streamId, arrived, limit = 1000) {
      const ids = await redis.zrange(unrecoveredKey(streamId), "0", String(limit - 1));
      const here = (await Promise.all(ids.map(async (id) => ((await arrived(id)) ? id : undefined)))).filter((id) => id !== undefined);
      if (here.length > 0) await redis.multi().zrem(unrecoveredKey(streamId), ...here).hdel(reasonsKey(streamId), ...here).exec();
      return here.length;
    },
    async retain(streamIds) {
      const keep = new Set(streamIds);
      const gone = (await redis.smembers(streamsKey)).filter((id) => !keep.has(id));
      if (gone.length === 0) return;
      const multi = redis.multi().srem(streamsKey, ...gone);
      for (const id of gone) multi.del(streamKey(id), unrecoveredKey(id), reasonsKey(id));
      await multi.exec();
    },
    async describe(lookbackMs, now) {
      const ids = (await failFastRedis.smembers(streamsKey)).sort();
      const oldest = `(${now - lookbackMs}`;
      const pipeline = failFastRedis.pipeline();
      for (const id of ids) {
        pipeline.zrangebyscore(unrecoveredKey(id), "-inf", oldest);
        pipeline.zremrangebyscore(unrecoveredKey(id), "-inf", oldest);
        pipeline.zcard(unrecoveredKey(id));
        pipeline.hgetall(streamKey(id));
        pipeline.zrevrange(unrecoveredKey(id), 0, 9);
      }
      const replies = (await pipeline.exec()) ?? [];
      for (const [error] of replies) if (error) throw error;
      const reply = (stream: number, part: number) => replies[stream * 5 + part]![1];
      // Reasons of ids gone from the lookback go with them; those of the sample are read.
      const reasons = failFastRedis.pipeline();
      ids.forEach((id, index) => {
        const expired = reply(index, 0) as string[];
        if (expired.length > 0) reasons.hdel(reasonsKey(id), ...expired);
        const sample = reply(index, 4) as string[];
        reasons.hmget(reasonsKey(id), ...(sample.length > 0 ? sample : [""]));
      });
      const reasonReplies = ids.length > 0 ? ((await reasons.exec()) ?? []) : [];
      const samples = reasonReplies.filter(([error, value]) => !error && Array.isArray(value)).map(([, value]) => value as Array<string | null>);
      return ids.map((streamId, index) => {
        const unrecovered = Number(reply(index, 2));
        const hash = reply(index, 3) as Record<string, string>;
        const sampleIds = reply(index, 4) as string[];
        const sampleReasons = samples[index] ?? [];
        const unreadSince = hash.checkpoint ? Number(hash.checkpoint) : hash.firstRunAt ? Number(hash.firstRunAt) - lookbackMs : undefined;
        return {
          streamId,
          checkpoint: iso(hash.checkpoint),
          lastRunAt: iso(hash.lastRunAt),
          lastError: hash.lastError || null,
          found: Number(hash.found ?? 0),
          recovered: Number(hash.recovered ?? 0),
          unrecovered,
          unrecoveredSample: sampleIds.map((eventId, at) => ({ eventId, reason: sampleReasons[at] ?? "not recorded (found before reasons were kept)" })),
          lagSeconds: unreadSince === undefined ? null : Math.max(0, (now - unreadSince) / 1000),
        };
      });
    },
  };
}
