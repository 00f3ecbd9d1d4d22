import type { Cluster, Redis } from "ioredis";
import { loadLua } from "../redis/load-lua.js";
import { createRedisLease, type RedisLease } from "../redis/redis-lease.js";

/** One hash tag for the pull's keys: its offset write checks the lease in the same script. */
export function pullKey(queuePrefix: string, name: "lease" | "position" | "status" | "poison"): string {
  return `{${queuePrefix}:pull}:${name}`;
}

export type PullStateName = "off" | "connecting" | "connected" | "waiting";

/** Where the pull stands in the tenant's log: what was stored last. */
export interface PullPosition {
  /** The offset of the last message whose content is stored (or was nothing to store). */
  offset?: string;
  /** When that offset was kept (ISO 8601). */
  offsetAt?: string;
  /** The `time` of the last event stored by pull (ISO 8601), as the tenant dated it: shown, never resumed from. */
  lastEventAt?: string;
  /** Where reading first began with no offset kept (PULL_START, `now` included), fixed by the first attempt of any process (ISO 8601). */
  startAt?: string;
}

/** `GET /admin/pull` (README.md#pulling-events-pull-on). */
export interface PullStatus {
  state: PullStateName;
  offsetAt: string | null;
  lastEventAt: string | null;
  lastError: string | null;
  /** The worker holding the connection (its host, pid and a random tag), or null. */
  holder: string | null;
  /** Pulled events that are not JSON or not CloudEvents, kept aside with their raw body: how many, and the newest first. */
  poison: { count: number; newest: PullPoison[] };
}

/** An event the pull could not read, kept aside with its raw body. */
export interface PullPoison {
  offset?: string;
  reason: string;
  raw: string;
  at: string;
}

export interface PullState {
  lease: RedisLease;
  position(): Promise<PullPosition>;
  /**
   * Keeps `offset` (and the time of the event it covers) once what it covers is stored;
   * false when `owner` no longer holds the lease: the offset is then not written.
   */
  keep(owner: string, offset: string, lastEventAt?: string): Promise<boolean>;
  /**
   * Fixes where reading begins before any offset is kept, once for every process: a restart
   * or a failover before the first kept offset reads from there, not from a later `now`,
   * so nothing emitted in between is missed. Answers the start fixed (this one or an earlier).
   */
  fixStart(at: Date): Promise<Date>;
  /** Publishes the holder's state and last error for every process's GET /admin/pull. */
  report(state: PullStateName, lastError: string | null): Promise<void>;
  /** Keeps a poison event aside (the newest `poisonKept`). */
  keepAside(poison: PullPoison): Promise<void>;
  poison(limit?: number): Promise<PullPoison[]>;
  /** The pull's state; `poisonShown` of the newest poison events with it. @defaultValue 10 */
  describe(enabled: boolean, poisonShown?: number): Promise<PullStatus>;
}

type KeepCommand = { streamkeeperPullKeep(lease: string, position: string, owner: string, offset: string, offsetAt: string, lastEventAt: string): Promise<number> };

const keepScript = loadLua(new URL("./pull-keep.lua", import.meta.url));

/** Pull dead letters kept; the oldest go first. */
export const poisonKept = 10_000;

export function createPullState(redis: Redis | Cluster, queuePrefix: string): PullState {
  const leaseKey = pullKey(queuePrefix, "lease");
  const positionKey = pullKey(queuePrefix, "position");
  const statusKey = pullKey(queuePrefix, "status");
  const poisonKey = pullKey(queuePrefix, "poison");
  redis.defineCommand("streamkeeperPullKeep", { numberOfKeys: 2, lua: keepScript });
  const commands = redis as unknown as KeepCommand;
  const lease = createRedisLease(redis, leaseKey);

  const position = async (): Promise<PullPosition> => {
    const fields = await redis.hgetall(positionKey);
    return { offset: fields.offset || undefined, offsetAt: fields.offsetAt || undefined, lastEventAt: fields.lastEventAt || undefined, startAt: fields.startAt || undefined };
  };

  const poisonNewest = async (limit = 100) => (limit > 0 ? (await redis.lrange(poisonKey, 0, limit - 1)).map((text) => JSON.parse(text) as PullPoison) : []);

  return {
    lease,
    position,
    keep: async (owner, offset, lastEventAt) => (await commands.streamkeeperPullKeep(leaseKey, positionKey, owner, offset, new Date().toISOString(), lastEventAt ?? "")) === 1,
    async fixStart(at) {
      const [, [, fixed]] = (await redis.multi().hsetnx(positionKey, "startAt", at.toISOString()).hget(positionKey, "startAt").exec()) as [unknown, [unknown, string]];
      return new Date(fixed);
    },
    async report(state, lastError) {
      await redis.hset(statusKey, "state", state, "lastError", lastError ?? "");
    },
    async keepAside(poison) {
      await redis.multi().lpush(poisonKey, JSON.stringify(poison)).ltrim(poisonKey, 0, poisonKept - 1).exec();
    },
    poison: poisonNewest,
    async describe(enabled, poisonShown = 10) {
      const [where, status, holder, poisonCount, newest] = await Promise.all([
        position(),
        redis.hgetall(statusKey),
        redis.get(leaseKey),
        redis.llen(poisonKey),
        poisonNewest(poisonShown),
      ]);
      const reported = status.state as PullStateName | undefined;
      // Without a holder nobody reads: a worker is starting, or none runs.
      const state: PullStateName = !enabled ? "off" : holder && reported && reported !== "off" ? reported : "waiting";
      const poison = { count: poisonCount, newest };
      return { state, offsetAt: where.offsetAt ?? null, lastEventAt: where.lastEventAt ?? null, lastError: status.lastError || null, holder: holder ?? null, poison };
    },
  };
}
